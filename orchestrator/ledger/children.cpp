#include "ledger/children.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "config/backend.hpp"
#include "config/fingerprint.hpp"

namespace kevlaya::ledger {

namespace {

bool has_devices(const config::DevicePlacement& d) { return !d.devices.empty() || !d.visible.empty(); }

ChildPtr bind_one(ChildSpec c, std::shared_ptr<const config::Profile> p) {
  if (has_devices(c.placement)) {  // the devices, argv and environment follow the placement
    auto own = std::make_shared<config::Profile>(*p);
    own->placement = c.placement;
    p = std::move(own);
  }
  c.key = config::child_key(*p);
  c.profile = std::move(p);
  return std::make_shared<const ChildSpec>(std::move(c));
}

// The shared child's process settings: its first member's, named for the child, every adapter off.
std::shared_ptr<const config::Profile> shared_settings(const config::Profile& lead, const ChildSpec& c) {
  auto p = std::make_shared<config::Profile>(lead);
  p->name = c.name;
  p->alias.clear();
  p->lora.clear();
  for (const auto& a : c.adapters) p->lora.push_back({a.name, a.path, 0.0});
  return p;
}

}  // namespace

std::vector<ChildPtr> bind_children(const config::ConfigPtr& cfg, const std::vector<ChildSpec>& planned) {
  std::set<std::string> spawning, taken;
  for (const auto& p : cfg->profiles)
    if (config::backend_of(p).spawns) spawning.insert(p.name);
  std::vector<ChildPtr> shared;
  for (const auto& c : planned) {
    if (!c.shared()) continue;
    const bool ok = std::all_of(c.members.begin(), c.members.end(), [&](const std::string& m) {
      return spawning.count(m) && !taken.count(m);
    });
    if (!ok || std::set<std::string>(c.members.begin(), c.members.end()).size() != c.members.size()) {
      spdlog::warn("shared base [{}] ignored: members must be two or more distinct profiles", c.name);
      continue;
    }
    taken.insert(c.members.begin(), c.members.end());
    shared.push_back(bind_one(c, shared_settings(*cfg->find_profile(c.members.front()), c)));
  }
  std::vector<ChildPtr> out;
  for (const auto& p : cfg->profiles) {  // config order: a shared child where its first member is
    if (!spawning.count(p.name)) continue;
    if (!taken.count(p.name)) {
      const auto it = std::find_if(planned.begin(), planned.end(), [&](const ChildSpec& c) { return c.name == p.name && !c.shared(); });
      std::shared_ptr<const config::Profile> own(cfg, &p);
      out.push_back(it != planned.end() ? bind_one(*it, std::move(own)) : lone_child(std::move(own)));
      continue;
    }
    for (const auto& s : shared)
      if (s->members.front() == p.name) out.push_back(s);
  }
  return out;
}

ChildPtr lone_child(std::shared_ptr<const config::Profile> p) {
  ChildSpec c;
  c.name = p->name;
  c.members = {p->name};
  return bind_one(std::move(c), std::move(p));
}

ChildPtr detach(const ChildSpec& c) {
  auto own = std::make_shared<ChildSpec>(c);
  own->profile = std::make_shared<const config::Profile>(*c.profile);
  return own;
}

}  // namespace kevlaya::ledger
