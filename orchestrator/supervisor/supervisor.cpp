// SupervisorImpl: applies the Scheduler's decisions through Effects, on one strand.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/clock.hpp"
#include "config/backend.hpp"
#include "ledger/calibration.hpp"
#include "ledger/plan.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

namespace {

using std::chrono::milliseconds;

// The start watchdog fires this long after startup_timeout_s + stop.grace_s: the child's own
// timeout (and the kill that follows it) normally ends a start first, with the log tail.
constexpr auto kWatchdogSlack = std::chrono::seconds(2);

Errc errc_for(FailureKind k) {
  switch (k) {
    case FailureKind::bad_model: return Errc::bad_model;
    case FailureKind::startup_timeout:
    case FailureKind::stalled: return Errc::timeout;
    case FailureKind::binary_not_found: return Errc::unavailable;  // 503, like any child that will not start
    case FailureKind::internal: return Errc::internal;
    default: return Errc::unavailable;
  }
}

// A ready child that sent nothing and did not answer its health probe (check_responsive).
ChildFailure hung_failure(const config::HealthCfg& h, int pid) {
  ChildFailure f;
  f.kind = FailureKind::hung;
  f.message = "stopped answering: a request got no byte for " + std::to_string(h.hung_check_s) + " s and GET " +
              (h.path.empty() ? std::string("/") : h.path) + " no answer within " +
              std::to_string(h.probe_timeout_ms) + " ms; killed (pid " + std::to_string(pid) + ")";
  f.hint = "the process was stopped (SIGSTOP), deadlocked or starved; it is restarted with backoff "
           "(health.hung_check_s, health.probe_timeout_ms)";
  return f;
}

Error prefixed(Error e, const std::string& profile) {
  e.message = profile + ": " + e.message;
  return e;
}

// A child's key in the load-time store: its name and what reaches it (a changed model or flags
// start over).
std::string load_key(const ledger::ChildSpec& c) { return c.name + "|" + c.key; }

}  // namespace

SupervisorImpl::SupervisorImpl(asio::any_io_executor ex, config::ConfigPtr cfg, std::unique_ptr<Effects> effects,
                               SupervisorOptions opts)
    : strand_(opts.serial_executor ? ex : asio::make_strand(ex)), cfg_(std::move(cfg)),
      effects_(std::move(effects)), opts_(std::move(opts)), wake_(strand_) {
  effects_->configure(cfg_);
  for (auto& c : ledger::bind_children(cfg_, opts_.children)) children_[c->name].spec = std::move(c);
  seed_loads();
  start_remotes();
}

void SupervisorImpl::seed_loads() {
  if (cfg_->orch.state_dir.empty()) return;
  const auto store = ledger::load_load_times(ledger::load_times_path(cfg_->orch.state_dir));
  if (!store) {
    spdlog::warn("{}", store.error().message);  // only the ETA and the reload cost start empty
    return;
  }
  for (auto& [name, ps] : children_) {
    if (!ps.spec || !ps.loads_ms.empty()) continue;
    if (const auto it = store->find(load_key(*ps.spec)); it != store->end())
      ps.loads_ms.assign(it->second.begin(), it->second.end());
  }
}

void SupervisorImpl::store_load(const ledger::ChildSpec& child, std::int64_t ms) {
  if (cfg_->orch.state_dir.empty()) return;
  // A read, a rewrite and an fsync: posted, so it runs on the strand after what the caller queued
  // (the waiting requests this start granted go to the child first).
  asio::post(strand_, [dir = cfg_->orch.state_dir, key = load_key(child), ms] {
    if (auto st = ledger::record_load_time(dir, key, ms); !st)
      spdlog::warn("load time not recorded: {}", st.error().message);
  });
}

const ledger::ChildSpec* SupervisorImpl::spec_of(const std::string& profile) const {
  for (const auto& [name, cs] : children_)  // a handful: a scan beats keeping an index in step
    if (cs.spec && !cs.removed &&
        std::find(cs.spec->members.begin(), cs.spec->members.end(), profile) != cs.spec->members.end())
      return cs.spec.get();
  return nullptr;
}

const std::string& SupervisorImpl::child_of(const std::string& profile) const {
  const auto* c = spec_of(profile);
  return c ? c->name : profile;
}

// ---- scheduling (sched_input and ram_short: supervisor_sched.cpp) --------------------------

// A failed child whose backoff (and cooldown) is over, and that nobody restarted, is stopped.
// Returns when the next one is due.
std::optional<Clock::time_point> SupervisorImpl::settle_failed(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  for (auto& [name, ps] : children_) {
    if (ps.phase != Phase::failed) continue;
    if (now >= ps.retry_at()) set_phase(name, ps, Phase::stopped);
    else if (!next || ps.retry_at() < *next) next = ps.retry_at();
  }
  return next;
}

void SupervisorImpl::reschedule() {
  if (shutting_down_) return;
  auto now = Clock::now();
  Decision d = decide(sched_input(now));
  for (const auto& a : d.actions) apply(a, now);
  auto wake_at = settle_failed(now);
  if (d.wake_at && (!wake_at || *d.wake_at < *wake_at)) wake_at = d.wake_at;
  // Warm switches (docs/warm.md): the oldest waiter's model is likely next; the effects prefetch it.
  if (!queue_.empty()) {
    const auto it = children_.find(child_of(queue_.front()->profile));
    if (it != children_.end() && !is_alive(it->second.phase)) effects_->likely_next(queue_.front()->profile);
  }
  // Re-armed only for an earlier deadline (this runs twice per request): an early wake decides again.
  if (wake_at && (!wake_armed_ || *wake_at < *wake_armed_)) {
    wake_armed_ = *wake_at;
    wake_.expires_at(*wake_at);
    wake_.async_wait([w = weak_from_this()](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self || ec) return;  // gone, or re-armed (the new wait owns wake_armed_)
      self->wake_armed_.reset();
      self->reschedule();
    });
  }
}

void SupervisorImpl::apply(const Action& a, Clock::time_point now) {
  auto& ps = children_[a.child];
  switch (a.kind) {
    case Action::Kind::release:
      release_to(a.request, ps, now);
      break;
    case Action::Kind::start:
      switch_of(a.child, "", now).rec.ahead = a.ahead;
      ps.crashed = false;
      ps.noticed_gone = false;
      ps.stale = false;
      set_phase(a.child, ps, Phase::starting);
      ++ps.starts;
      ++starts_in_flight_;  // counted from the decision: a shutdown before do_start runs waits too
      asio::co_spawn(strand_, do_start(a.child, ++ps.gen), asio::detached);
      break;
    case Action::Kind::refuse:
      refuse(a.request, a);
      break;
    case Action::Kind::drain:
      {
        auto& sw = switch_of(a.child, a.child, now);
        if (sw.rec.reason.empty()) sw.rec.reason = a.reason;
        sw.drain_start = now;
      }
      set_phase(a.child, ps, Phase::draining);
      break;
    case Action::Kind::stop:
      // An unload (admin, reload, idle) is not a switch: the next start is a cold one, from nothing.
      if (ps.unload_reason.empty()) {
        auto& sw = switch_of(a.child, a.child, now);
        if (sw.drain_start) sw.rec.drain_ms = whole_ms(now - *sw.drain_start);
        if (sw.rec.reason.empty()) sw.rec.reason = a.reason;
      }
      if (ps.in_flight > 0)
        cut_leases(ps, make_error(Errc::child_crashed, a.child + ": stopped after drain_timeout_s"));
      set_phase(a.child, ps, Phase::stopping);
      asio::co_spawn(strand_, do_stop(a.child), asio::detached);
      break;
    case Action::Kind::unload:  // idle: nothing in flight, nothing queued; not a switch
      ps.unload_reason = ps.keep_alive ? "keep_alive" : "idle";
      spdlog::info("{}: unloading after {} ms idle ({})", a.child, whole_ms(now - ps.idle_since), ps.unload_reason);
      set_phase(a.child, ps, Phase::stopping);
      asio::co_spawn(strand_, do_stop(a.child), asio::detached);
      break;
  }
}

// ---- effects -------------------------------------------------------------------------------

Effects::ExitCallback SupervisorImpl::exit_callback(const std::string& name, std::uint64_t gen) {
  return [w = weak_from_this(), name, gen](ChildFailure f) {
    if (auto self = w.lock())
      asio::post(self->strand_, [self, name, gen, f = std::move(f)]() mutable {
        self->on_child_exit(name, gen, std::move(f));
      });
  };
}

// Runs the effects' start under a watchdog: whatever happens during a start (an exception, a
// spawn or a restore that never returns), it ends within the profile's startup timeout (plus the
// time a stop may take), as a classified failure.
asio::awaitable<StartOutcome> SupervisorImpl::start_watched(const std::string& name, std::uint64_t gen) {
  struct Pending {
    explicit Pending(asio::any_io_executor s) : timer(std::move(s)) {}
    std::optional<StartOutcome> out;
    asio::steady_timer timer;  // cancelled when `out` is set
  };
  auto self = shared_from_this();
  const auto spec = children_[name].spec;  // the version started, alive until the start returns
  const auto& prof = spec->profile;
  auto p = std::make_shared<Pending>(strand_);
  auto task = [self, p, spec, name, gen, cb = exit_callback(name, gen)]() -> asio::awaitable<void> {
    StartOutcome out;
    try {
      if (self->shutting_down_ || self->children_[name].gen != gen) {  // abandoned before it began
        out.failure.kind = FailureKind::internal;
        out.failure.message = "abandoned before it started";
      } else {
        out = co_await self->effects_->start(*spec, cb);
      }
    } catch (const std::exception& e) {
      out.failure.kind = FailureKind::internal;
      out.failure.message = std::string("the start failed: ") + e.what();
      out.failure.hint = "an orchestrator error; please report it with the log";
    }
    if (!p->out) {
      p->out = std::move(out);
      p->timer.cancel();
    } else if (out.ok() && (self->shutting_down_ ||
                            (self->children_[name].gen == gen && !is_alive(self->children_[name].phase)))) {
      spdlog::warn("{}: a start abandoned by the watchdog came up late; stopping it", name);
      co_await self->effects_->stop(name);
    }
  };
  asio::co_spawn(strand_, std::move(task), asio::detached);
  const auto limit = std::chrono::seconds(prof->health.startup_timeout_s) +
                     milliseconds(static_cast<std::int64_t>(prof->stop.grace_s * 1000)) + kWatchdogSlack;
  const auto deadline = Clock::now() + limit;
  while (!p->out) {
    boost::system::error_code ec;
    p->timer.expires_at(deadline);
    co_await p->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!p->out && Clock::now() >= deadline) {
      StartOutcome out;
      out.failure.kind = FailureKind::startup_timeout;
      out.failure.message = "not ready within " + std::to_string(prof->health.startup_timeout_s) +
                            " s (health.startup_timeout_s): the start did not finish";
      out.failure.hint = "check the child's log and the state and log directories";
      p->out = std::move(out);
      spdlog::error("{}: start watchdog fired after {} ms", name, whole_ms(limit));
    }
  }
  co_return std::move(*p->out);
}

asio::awaitable<void> SupervisorImpl::do_start(std::string name, std::uint64_t gen) {
  auto self = shared_from_this();
  auto& ps = children_[name];
  const auto began = Clock::now();
  StartOutcome out = co_await start_watched(name, gen);
  auto now = Clock::now();
  if (shutting_down_) {  // shutdown stopped it meanwhile, or stopped nothing yet: this child goes too
    if (out.ok()) co_await effects_->stop(name);
    --starts_in_flight_;
    notify_watchers();
    co_return;
  }
  --starts_in_flight_;
  if (ps.gen != gen) co_return;  // superseded
  const auto load_ms = whole_ms(now - began);
  if (out.ok()) {  // the reload cost: spawn to ready (what stopping the previous child took is not its)
    ps.loads_ms.push_back(load_ms);
    if (ps.loads_ms.size() > ledger::kLoadTimesKept) ps.loads_ms.pop_front();
    ps.contexts.clear();  // a new child: empty slots
  }
  finish_switch(name, out, now);
  if (out.ok()) {
    ps.endpoint = out.report->endpoint;
    ps.pid = out.report->pid;
    ps.ready_since = now;
    ps.became_ready_at = now;
    ps.idle_since = now;
    set_phase(name, ps, Phase::ready);
    if (opts_.on_ready) opts_.on_ready(*ps.spec, *out.report);
    if (std::exchange(ps.stale, false) || ps.removed) {  // reloaded while it started: replace it
      set_phase(name, ps, Phase::draining);
      ps.unload_reason = "reload";
    }
  } else {
    ps.last_failure = out.failure;
    spdlog::error("{}: start failed [{}]: {}", name, to_string(out.failure.kind), out.failure.message);
    note_failure(ps, now);
    fail_queued(name, prefixed(out.failure.to_error(errc_for(out.failure.kind)), name));
    if (out.failure.kind == FailureKind::startup_timeout || out.failure.kind == FailureKind::internal) {
      ps.crashed = true;  // whatever was spawned goes first: `failed` once stopped
      set_phase(name, ps, Phase::stopping, out.failure);
      asio::co_spawn(strand_, do_stop(name), asio::detached);
    } else {
      set_phase(name, ps, Phase::failed, out.failure);
    }
  }
  notify_watchers();
  reschedule();  // grants this child's waiting requests
  if (out.ok()) store_load(*ps.spec, load_ms);
}

asio::awaitable<void> SupervisorImpl::do_stop(std::string name) {
  auto self = shared_from_this();
  StopReport rep = co_await effects_->stop(name);
  auto& ps = children_[name];
  if (auto* sw = pending_switch(name); sw && sw->rec.from == name) {
    sw->rec.stop_ms += rep.stop_ms;
    sw->rec.vram_wait_ms += rep.vram_wait_ms;
    sw->rec.save_ms += rep.save_ms;
  }
  if (rep.killed) spdlog::warn("{}: needed SIGKILL after stop.grace_s", name);
  if (ps.phase == Phase::stopping) {  // (shutdown may have settled it meanwhile)
    ps.pid = 0;
    const bool crashed = std::exchange(ps.crashed, false);
    set_phase(name, ps, crashed ? Phase::failed : Phase::stopped,
              crashed ? ps.last_failure : std::optional<ChildFailure>{});
    publish_unload(name, ps, rep);
  }
  notify_watchers();
  reschedule();
}

void SupervisorImpl::on_child_exit(const std::string& name, std::uint64_t gen, ChildFailure f) {
  auto& ps = children_[name];
  if (ps.gen != gen) return;  // superseded
  if (ps.noticed_gone) {      // noticed already (check_alive): keep the exit status and log tail
    ps.noticed_gone = false;
    f.message = "child exited unexpectedly: " + f.message;
    ps.last_failure = std::move(f);
    return;
  }
  if (ps.phase != Phase::ready && ps.phase != Phase::draining) return;  // stopping: expected
  on_crash(name, ps, std::move(f));
}

void SupervisorImpl::on_crash(const std::string& name, ChildState& ps, ChildFailure f) {
  auto now = Clock::now();
  ++ps.crashes;
  Error e = prefixed(f.to_error(Errc::child_crashed), name);
  cut_leases(ps, e);
  ps.last_failure = f;
  note_failure(ps, now);
  ps.crashed = true;  // clean up the dead child's pipes before any restart; then `failed`
  set_phase(name, ps, Phase::stopping, std::move(f));
  asio::co_spawn(strand_, do_stop(name), asio::detached);
}

bool SupervisorImpl::check_alive(const LeaseShared& lease) {
  if (lease.crashed.load(std::memory_order_acquire)) return true;
  if (lease.remote) {
    if (remotes_) remotes_->suspect(lease.profile);
    return false;
  }
  auto it = children_.find(lease.child);
  if (it == children_.end()) return false;
  auto& ps = it->second;
  const bool held = ps.leases.count(lease.id) > 0;
  if (held && (ps.phase == Phase::ready || ps.phase == Phase::draining) && effects_->exited(lease.child)) {
    ChildFailure f;
    f.kind = FailureKind::crashed;
    f.message = "child exited unexpectedly (a request to it failed and its process is gone)";
    f.hint = "see the last log lines (kevlaya-orch logs " + lease.child + ")";
    spdlog::warn("{}: {}", lease.child, f.message);
    ps.noticed_gone = true;
    on_crash(lease.child, ps, std::move(f));
  }
  return lease.crashed.load(std::memory_order_acquire);
}

asio::awaitable<bool> SupervisorImpl::check_responsive(std::shared_ptr<LeaseShared> lease) {
  auto self = shared_from_this();
  if (check_alive(*lease) || lease->remote) co_return lease->crashed.load(std::memory_order_acquire);
  auto it = children_.find(lease->child);
  if (it == children_.end() || !it->second.leases.count(lease->id)) co_return false;
  const std::uint64_t gen = it->second.gen;
  const bool answers = co_await effects_->responsive(lease->child);
  auto& ps = children_[lease->child];
  if (answers || ps.gen != gen || (ps.phase != Phase::ready && ps.phase != Phase::draining))
    co_return lease->crashed.load(std::memory_order_acquire);
  ChildFailure f = hung_failure(ps.settings().health, ps.pid);
  spdlog::error("{}: {}", lease->child, f.message);
  effects_->kill(lease->child);
  on_crash(lease->child, ps, std::move(f));
  co_return lease->crashed.load(std::memory_order_acquire);
}

// Crash-loop accounting: exponential backoff, then `failed` for cooldown_s.
void SupervisorImpl::note_failure(ChildState& ps, Clock::time_point now) {
  const auto& r = ps.settings().restart;
  ps.failures.push_back(now);
  while (!ps.failures.empty() && ps.failures.front() < now - std::chrono::seconds(r.window_s))
    ps.failures.pop_front();
  auto n = static_cast<int>(ps.failures.size());
  if (n > r.max_restarts) {
    ps.failed_until = now + std::chrono::seconds(r.cooldown_s);
    ps.failures.clear();
    spdlog::error("{}: {} failures within {} s; marked failed for {} s", ps.spec->name, n, r.window_s,
                  r.cooldown_s);
    Error e = ps.last_failure ? ps.last_failure->to_error(Errc::profile_failed) : Error{};
    e.code = Errc::profile_failed;
    e.message = ps.spec->name + ": failed after repeated crashes (last: " + e.message + ")";
    e.retry_after_s = r.cooldown_s;
    fail_queued(ps.spec->name, e);
    return;
  }
  std::int64_t backoff = r.backoff_initial_ms;
  for (int i = 1; i < n && backoff < r.backoff_max_s * 1000LL; ++i) backoff *= 2;
  ps.not_before = now + milliseconds(std::min<std::int64_t>(backoff, r.backoff_max_s * 1000LL));
}

// ---- admin ---------------------------------------------------------------------------------

void SupervisorImpl::notify_watchers() {
  for (auto* t : watchers_) t->cancel();
}

asio::awaitable<void> SupervisorImpl::wait_change() {
  asio::steady_timer t(strand_, Clock::time_point::max());
  watchers_.push_back(&t);
  boost::system::error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  watchers_.remove(&t);
}

asio::awaitable<Snapshot> SupervisorImpl::snapshot() {
  auto now = Clock::now();
  Snapshot s;
  s.shutting_down = shutting_down_;
  s.queued = queue_.size();
  std::map<std::string, const ChildState*> by_profile;  // per profile; a group's members share one child
  for (const auto& [child, cs] : children_)
    if (cs.spec && !cs.removed)
      for (const auto& m : cs.spec->members) by_profile[m] = &cs;
  for (const auto& [name, child] : by_profile) {
    const auto& ps = *child;
    ProfileStatus st;
    st.name = name;
    st.state = ps.phase;
    st.pid = ps.pid;
    st.port = ps.phase == Phase::ready || ps.phase == Phase::draining ? ps.endpoint.port : 0;
    st.in_flight = ps.in_flight;
    st.queued = static_cast<int>(std::count_if(queue_.begin(), queue_.end(),
                                                [&](const auto& w) { return w->profile == name; }));
    st.restarts_in_window = static_cast<int>(ps.failures.size());
    st.total_restarts = std::max(0, ps.starts - 1);
    st.crashes = ps.crashes;
    st.last_failure = ps.last_failure;
    if (ps.phase == Phase::failed && now < ps.retry_at())
      st.retry_after_s = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(ps.retry_at() - now).count());
    st.gpus = ps.settings().placement.devices;
    fill_lifecycle(st, ps, now);
    s.profiles.push_back(std::move(st));
  }
  add_remote_status(s);
  s.devices = opts_.devices;
  s.recent_switches.assign(switches_.begin(), switches_.end());
  co_return s;
}

asio::awaitable<void> SupervisorImpl::shutdown() {
  auto self = shared_from_this();
  shutting_down_ = true;
  wake_.cancel();
  if (remotes_) remotes_->stop();
  std::deque<std::shared_ptr<Waiter>> waiting;
  waiting.swap(queue_);
  for (auto& w : waiting) {
    w->result.emplace(make_error(Errc::unavailable, "shutting down"));
    w->wake();
  }
  for (auto& [name, ps] : children_) {
    if (!is_alive(ps.phase)) continue;
    cut_leases(ps, make_error(Errc::unavailable, name + ": stopped by shutdown"));
    if (ps.phase == Phase::stopping) continue;  // its stop (do_stop) is in flight: waited for below
    ++ps.gen;  // a start in flight is abandoned
    set_phase(name, ps, Phase::stopping);
    co_await effects_->stop(name);
    ps.pid = 0;
    ps.crashed = false;
    if (ps.phase == Phase::stopping) set_phase(name, ps, Phase::stopped);
  }
  // A stop begun before shutdown (a switch, an unload) ends on its own, bounded by stop.grace_s and
  // the SIGKILL after it; returning earlier would leave its process running after shutdown.
  const auto stopping = [this] {
    return std::any_of(children_.begin(), children_.end(),
                       [](const auto& p) { return p.second.phase == Phase::stopping; });
  };
  // A start in flight ends too: its child is killed above (or was never spawned), or stopped by
  // do_start when it came up after all.
  while (stopping() || starts_in_flight_ > 0) co_await wait_change();
  notify_watchers();
}

}  // namespace kevlaya::supervisor
