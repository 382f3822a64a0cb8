#include "ledger/children.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "config/backend.hpp"
#include "config/fingerprint.hpp"

namespace kevlaya::ledger {

namespace {

bool has_devices(const config::DevicePlacement& d) { return !d.devices.empty() || !d.visible.empty(); }

// `c` bound to `p`, the profile of its (first) member: run as it is when the child neither shares
// nor is placed, else one copy made to fit (named for the child with every adapter at scale 0 when
// shared; the child's devices when placed).
ChildPtr bind_one(ChildSpec c, std::shared_ptr<const config::Profile> p) {
  if (c.shared() || has_devices(c.placement)) {
    auto own = std::make_shared<config::Profile>(*p);
    if (c.shared()) {
      own->name = c.name;
      own->alias.clear();
      own->lora.clear();
      for (const auto& a : c.adapters) own->lora.push_back({a.name, a.path, 0.0});
    }
    if (has_devices(c.placement)) own->placement = c.placement;
    p = std::move(own);
  }
  c.key = config::child_key(*p);
  c.profile = std::move(p);
  return std::make_shared<const ChildSpec>(std::move(c));
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
    shared.push_back(bind_one(c, {cfg, cfg->find_profile(c.members.front())}));
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
