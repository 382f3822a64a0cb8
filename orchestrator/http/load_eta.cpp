// Load ETA (docs/lifecycle.md, "Load ETA"): the door keeps each child's last successful loads, read
// from the switch records it receives (start to ready), and persists them beside the ledger's
// calibration in state_dir, so a starting child shows how long it should take, after a restart too.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <spdlog/spdlog.h>

#include <algorithm>

#include "http/detail.hpp"
#include "ledger/calibration.hpp"

namespace kevlaya::http {

namespace {

// The store key: the child's name and what reaches it (its argv), so a changed model or flags
// start over. A shared-base group's child has no profile of its own: kept in memory only.
std::string load_key(const config::Profile& p) { return p.name + "|" + config::shell_join(config::build_argv(p, "h", 0)); }

}  // namespace

void seed_loads(Door& d) {
  if (d.cfg->orch.state_dir.empty()) return;
  const auto store = ledger::load_load_times(ledger::load_times_path(d.cfg->orch.state_dir));
  if (!store) {
    spdlog::warn("{}", store.error().message);  // only the ETA is lost
    return;
  }
  for (const auto& p : d.cfg->profiles) {
    if (const auto it = store->find(load_key(p)); it != store->end()) d.feed.loads[p.name] = it->second;
  }
}

void note_load(Door& d, const supervisor::SwitchRecord& rec) {
  if (!rec.ok) return;
  // The record's time from its first action (a drain, a stop, or the start itself) to ready,
  // less what stopping the previous child took: the start to ready.
  const auto ms = std::max<std::int64_t>(0, rec.total_ms - rec.drain_ms - rec.stop_ms - rec.vram_wait_ms);
  auto& loads = d.feed.loads[rec.to];
  loads.push_back(ms);
  if (loads.size() > ledger::kLoadTimesKept) loads.erase(loads.begin());
  const auto* p = d.cfg->find_profile(rec.to);
  if (!p || d.cfg->orch.state_dir.empty()) return;
  // A few hundred bytes, once per switch (which took far longer).
  if (auto st = ledger::record_load_time(d.cfg->orch.state_dir, load_key(*p), ms); !st)
    spdlog::warn("load time not recorded: {}", st.error().message);
}

std::optional<double> expected_load_s(const Door& d, const std::string& child) {
  const auto it = d.feed.loads.find(child);
  if (it == d.feed.loads.end() || it->second.empty()) return std::nullopt;
  auto v = it->second;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  const double ms = n % 2 ? static_cast<double>(v[n / 2])
                          : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
  return ms / 1000.0;
}

std::optional<double> load_eta_s(const Door& d, const std::string& child) {
  const auto expected = expected_load_s(d, child);
  const auto since = d.feed.since_ms.find(child);
  if (!expected || since == d.feed.since_ms.end()) return std::nullopt;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  return std::max(0.0, *expected - static_cast<double>(now_ms - since->second) / 1000.0);
}

}  // namespace kevlaya::http
