// What the Scheduler sees: the supervisor's state as plain values (sched_input), each live
// child's reload cost, and the host-RAM check that narrows the allowed sets (ram_short).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "ledger/calibration.hpp"
#include "ledger/plan.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

namespace {

// What bringing a child back would cost, in seconds: the median of its recent loads (0 = never
// loaded here: unknown), plus prefilling again what its slots hold, unless slot_cache keeps them.
double reload_cost_s(const ChildState& ps) {
  double prefill = 0;
  if (!ps.settings().slot_cache.enabled)
    for (const auto t : ps.contexts) prefill += static_cast<double>(t) * ps.prefill_s_per_token;
  return expected_load_s(ps).value_or(0) + prefill;
}

}  // namespace

std::optional<double> expected_load_s(const ChildState& ps) {
  if (ps.loads_ms.empty()) return std::nullopt;
  // On the stack: this runs for every live child at every decision (twice per request).
  std::array<std::int64_t, 4 * ledger::kLoadTimesKept> v{};
  const auto n = std::min(ps.loads_ms.size(), v.size());  // the latest (more only from an edited file)
  std::copy(ps.loads_ms.end() - static_cast<std::ptrdiff_t>(n), ps.loads_ms.end(), v.begin());
  std::sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  const double ms = n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1] + v[n / 2])) / 2;
  return ms / 1000.0;
}

const SchedInput& SupervisorImpl::sched_input(Clock::time_point now) {
  // Refilled in place: this runs twice per request, and cleared vectors keep their room.
  SchedInput& in = sched_in_;
  in.children.clear();
  in.queue.clear();
  in.not_before.clear();
  in.ahead.reset();
  in.cfg = cfg_->orch.scheduling;
  in.now = now;
  in.allowed_sets = opts_.allowed_sets;  // child names, as the plan states them
  for (const auto& [name, ps] : children_) {
    if (ps.retry_at() > now) in.not_before[name] = ps.retry_at();
    if (!is_alive(ps.phase)) continue;
    SchedChild c;
    c.child = name;
    c.phase = ps.phase;
    c.in_flight = ps.in_flight;
    c.parallel = std::max(1, ps.settings().parallel);
    c.ready_since = ps.ready_since;
    c.draining_since = ps.draining_since;
    if (const auto limit = idle_limit(ps); limit && ps.phase == Phase::ready && ps.in_flight == 0)
      c.idle_deadline = ps.idle_since + *limit;
    c.idle_since = ps.idle_since;
    c.reload_cost_s = reload_cost_s(ps);
    if (const auto& ev = ps.settings().evict; ev.protect)
      c.protection = SchedChild::Protection{std::chrono::seconds(ev.idle_s), std::chrono::seconds(ev.max_wait_s)};
    in.children.push_back(std::move(c));
  }
  in.wanted = wanted();
  // A guess replaces a resident child (or completes the switch that stopped one for it); it never
  // starts a model when nothing is resident (after an idle unload or a keep_alive of 0). Only an
  // empty queue can guess (scheduler.hpp), so a queued request skips the prediction.
  if (cfg_->orch.scheduling.switch_ahead && queue_.empty() && (!in.children.empty() || !switch_.empty()))
    in.ahead = predict_alternation(recent_);
  for (const auto& w : queue_) in.queue.push_back({w->id, w->child, w->enqueued, w->deadline});
  if (ram_short(in)) in.allowed_sets.clear();  // one child at a time until it has started
  return in;
}

// The plan priced its co-resident sets against host RAM at startup; other programs may have taken
// memory since. The oldest model waiting to start beside live children is checked against what is
// available now (read only then).
bool SupervisorImpl::ram_short(const SchedInput& in) const {
  if (in.children.empty() || in.allowed_sets.empty()) return false;
  const auto pinned = [&](const SchedChild& c) {  // a pin is never a victim: the plan's sets stay
    const auto it = children_.find(c.child);
    return it != children_.end() && it->second.settings().pin;
  };
  if (std::any_of(in.children.begin(), in.children.end(), pinned)) return false;
  for (const auto& r : in.queue) {
    const bool live = std::any_of(in.children.begin(), in.children.end(),
                                  [&](const SchedChild& c) { return c.child == r.child; });
    if (live) continue;
    const auto it = children_.find(r.child);
    const std::uint64_t need = it == children_.end() ? 0
                               : opts_.devices.empty() ? it->second.spec->host_alone
                                                       : it->second.spec->host_beside;
    const auto avail = need == 0 ? std::nullopt : effects_->host_ram_available();  // 0: not priced
    if (!avail || *avail >= need + static_cast<std::uint64_t>(ledger::kRamReserveMiB) * ledger::kMiB) {
      ram_warned_.clear();
      return false;
    }
    if (ram_warned_ != r.child) {
      spdlog::warn("{} needs {} MiB of host RAM (+{} MiB kept free) and {} MiB are available now: the "
                   "children it could have joined are stopped first", r.child, need >> 20,
                   ledger::kRamReserveMiB, *avail >> 20);
      ram_warned_ = r.child;
    }
    return true;
  }
  return false;
}

}  // namespace kevlaya::supervisor
