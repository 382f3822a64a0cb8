// Lifecycle policy of SupervisorImpl (docs/lifecycle.md): how long an idle child stays loaded
// (idle_unload_s, a request's keep_alive), pins and preloads (the scheduler's `wanted`), admin
// unloads and their `unload` events. The decisions themselves are the Scheduler's (pure).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>

#include "common/clock.hpp"
#include "supervisor/load_progress.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

// nullopt = never unloaded when idle: pinned, idle_unload_s 0, or keep_alive "forever".
std::optional<Clock::duration> SupervisorImpl::idle_limit(const ChildState& ps) const {
  if (ps.settings().pin) return std::nullopt;
  if (ps.keep_alive) {
    if (*ps.keep_alive == ChildState::kForever) return std::nullopt;
    return *ps.keep_alive;
  }
  const int s = cfg_->idle_unload_s(ps.settings());
  if (s <= 0) return std::nullopt;
  return std::chrono::seconds(s);
}

// The last request decides (as in Ollama): its keep_alive, capped by keep_alive_max_s, or the
// profile's idle_unload_s when it sent none.
void SupervisorImpl::note_keep_alive(ChildState& ps, std::int64_t keep_alive_s) {
  if (keep_alive_s == LeaseShared::kNoKeepAlive) {
    ps.keep_alive.reset();
    return;
  }
  const int cap = cfg_->orch.keep_alive_max_s;  // -1 = no cap
  if (keep_alive_s < 0) {
    ps.keep_alive = cap < 0 ? ChildState::kForever : Clock::duration(std::chrono::seconds(cap));
    return;
  }
  if (cap >= 0) keep_alive_s = std::min<std::int64_t>(keep_alive_s, cap);
  ps.keep_alive = std::chrono::seconds(keep_alive_s);
}

// Pins always; preloads until start_wanted()'s round has run. In child names.
std::vector<std::string> SupervisorImpl::wanted() const {
  std::vector<std::string> out = preload_;
  for (const auto& [name, ps] : children_)
    if (ps.settings().pin && !ps.removed && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

void SupervisorImpl::start_wanted() {
  for (const auto& name : cfg_->orch.preload) {
    const auto* p = cfg_->find_profile(name);
    if (!p) continue;  // (config validation names unknown preloads)
    const auto& child = child_of(p->name);
    if (std::find(preload_.begin(), preload_.end(), child) == preload_.end()) preload_.push_back(child);
  }
  reschedule();
  for (const auto& name : preload_) {
    if (!is_alive(children_[name].phase))
      spdlog::warn("preload {}: skipped (it does not fit beside the models already starting)", name);
  }
  preload_.clear();
}

// Called when a stop has completed: the request's keep_alive ends with the child, and an unload
// (idle, keep_alive, admin, reload) is published with the stop's timings.
void SupervisorImpl::publish_unload(const std::string& name, ChildState& ps, const StopReport& rep) {
  ps.keep_alive.reset();
  if (ps.unload_reason.empty()) return;
  Event e;
  e.type = Event::Type::unload;
  e.child = name;
  e.reason = std::exchange(ps.unload_reason, {});
  e.stop = rep;
  spdlog::info("{}: unloaded ({}) in {} ms (stop {} ms, vram wait {} ms)", name, e.reason,
               rep.stop_ms + rep.vram_wait_ms, rep.stop_ms, rep.vram_wait_ms);
  events_->publish(std::move(e));
}

void SupervisorImpl::fill_lifecycle(ProfileStatus& st, const ChildState& ps, Clock::time_point now) {
  st.pinned = ps.settings().pin;
  if (ps.phase == Phase::starting) {
    st.load_progress = effects_->progress(ps.spec->name);
    if (const auto expected = expected_load_s(ps)) {
      if (!st.load_progress) st.load_progress = LoadProgress{"starting", std::nullopt, std::nullopt};
      // past the estimate: no eta_s, the stage says "taking longer than the estimated N s"
      apply_load_estimate(*st.load_progress, *expected, std::chrono::duration<double>(now - ps.starting_since).count());
    }
  }
  const auto limit = idle_limit(ps);
  if (!limit || ps.phase != Phase::ready) return;
  const bool idle = ps.in_flight == 0 && std::none_of(queue_.begin(), queue_.end(), [&](const auto& w) {
    return w->child == ps.spec->name;
  });
  const auto left = idle ? ps.idle_since + *limit - now : *limit;
  st.idle_unload_in_s = std::max(0.0, std::chrono::duration<double>(left).count());
}

asio::awaitable<Status> SupervisorImpl::unload(std::optional<std::string> model) {
  auto self = shared_from_this();
  std::optional<std::string> only;
  if (model) {
    const auto* p = cfg_->find_profile(*model);
    if (!p) co_return make_error(Errc::not_found, "unknown model '" + *model + "'");
    if (p->pin)
      co_return make_error(Errc::bad_request, p->name + " is pinned (pin: true) and stays loaded",
                           "remove 'pin: true' from its profile and reload the configuration");
    only = child_of(p->name);
  }
  std::vector<std::string> mine;  // the children this call stops
  for (auto& [name, ps] : children_) {
    if (ps.settings().pin || ps.removed || (only && name != *only)) continue;
    if (ps.phase == Phase::ready) set_phase(name, ps, Phase::draining);
    if (ps.phase == Phase::draining || ps.phase == Phase::stopping) {
      if (ps.unload_reason.empty()) ps.unload_reason = "admin";
      mine.push_back(name);
    }
  }
  reschedule();
  auto busy = [&] {
    return std::any_of(mine.begin(), mine.end(), [&](const std::string& n) {
      const auto ph = children_[n].phase;
      return ph == Phase::stopping || ph == Phase::draining;
    });
  };
  const auto t0 = Clock::now();
  while (busy()) co_await wait_change();
  if (!mine.empty()) spdlog::info("admin unload: {} child(ren) stopped in {} ms", mine.size(), whole_ms(Clock::now() - t0));
  co_return ok_status();
}

}  // namespace kevlaya::supervisor
