// SupervisorImpl: applies the Scheduler's decisions through Effects, on one strand.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

namespace {

using std::chrono::milliseconds;
using Phase = ProfState::Phase;

std::int64_t ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

Errc errc_for(FailureKind k) {
  switch (k) {
    case FailureKind::bad_model: return Errc::bad_model;
    case FailureKind::startup_timeout:
    case FailureKind::stalled: return Errc::timeout;
    case FailureKind::binary_not_found: return Errc::unavailable;  // 503, like any child that will not start
    default: return Errc::unavailable;
  }
}

Error prefixed(Error e, const std::string& profile) {
  e.message = profile + ": " + e.message;
  return e;
}

}  // namespace

SupervisorImpl::SupervisorImpl(asio::any_io_executor ex, config::Config cfg, std::unique_ptr<Effects> effects,
                               SupervisorOptions opts)
    : strand_(asio::make_strand(ex)), cfg_(std::move(cfg)), effects_(std::move(effects)),
      opts_(std::move(opts)), wake_(strand_) {
  for (const auto& p : cfg_.profiles) child_of_[p.name] = p.name;
  add_shared_bases();
  for (const auto& p : cfg_.profiles) {
    if (child_of_[p.name] == p.name) profs_[p.name].profile = &p;
  }
}

// One synthesized profile per group: the first member's settings, every adapter at scale 0 (the
// `lora` field of each request selects the member's adapters; unlisted ones would stay at 0).
void SupervisorImpl::add_shared_bases() {
  for (const auto& g : opts_.shared_bases) {
    const bool known = g.members.size() > 1 && std::all_of(g.members.begin(), g.members.end(), [&](const auto& m) {
      const auto it = child_of_.find(m);
      return it != child_of_.end() && it->second == m;  // a profile, in no other group
    });
    if (!known) {
      spdlog::warn("shared base [{}] ignored: members must be two or more distinct profiles", shared_child_name(g));
      continue;
    }
    config::Profile child = *cfg_.find_profile(g.members.front());
    child.name = shared_child_name(g);
    child.alias.clear();
    child.lora = g.adapters;
    for (auto& a : child.lora) a.scale = 0;
    group_profiles_.push_back(std::move(child));
    profs_[group_profiles_.back().name].profile = &group_profiles_.back();
    for (const auto& m : g.members) {
      child_of_[m] = group_profiles_.back().name;
      auto& lora = lora_of_[m];
      const auto sc = g.scales.find(m);
      for (std::size_t i = 0; i < g.adapters.size(); ++i) {
        const double scale = sc != g.scales.end() && i < sc->second.size() ? sc->second[i] : 0.0;
        const auto& a = g.adapters[i];
        lora.emplace_back(a.name.empty() ? a.path.stem().string() : a.name, scale);
      }
    }
  }
}

const std::string& SupervisorImpl::child_of(const std::string& profile) const {
  const auto it = child_of_.find(profile);
  return it != child_of_.end() ? it->second : profile;
}

// ---- queue ---------------------------------------------------------------------------------

asio::awaitable<Result<Lease>> SupervisorImpl::acquire(std::string model, Clock::time_point deadline) {
  auto self = shared_from_this();
  if (shutting_down_) co_return make_error(Errc::unavailable, "shutting down");
  const config::Profile* p = cfg_.find_profile(model);
  if (!p) co_return make_error(Errc::not_found, "unknown model '" + model + "'");
  const std::string& child = child_of(p->name);
  auto& ps = profs_[child];
  auto now = Clock::now();
  if (now < ps.failed_until) {
    Error e = ps.last_failure ? ps.last_failure->to_error(Errc::profile_failed) : Error{};
    e.code = Errc::profile_failed;
    e.message = p->name + ": failed after repeated crashes; cooling down (last: " + e.message + ")";
    e.retry_after_s = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(ps.failed_until - now).count());
    co_return e;
  }
  if (cfg_.orch.queue.max_depth > 0 && queue_.size() >= static_cast<std::size_t>(cfg_.orch.queue.max_depth))
    co_return make_error(Errc::queue_full, "queue is full", "retry later");
  auto w = std::make_shared<Waiter>(strand_);
  w->id = next_id_++;
  w->profile = p->name;
  w->child = child;
  w->enqueued = now;
  w->deadline = deadline;
  queue_.push_back(w);
  reschedule();
  while (!w->result) {
    boost::system::error_code ec;
    w->timer.expires_at(deadline);
    co_await w->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!w->result && Clock::now() >= deadline) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), w), queue_.end());
      w->result.emplace(make_error(Errc::timeout, "no free slot of '" + p->name + "' before the deadline",
                                   "the model is busy or still loading; raise the deadline"));
      reschedule();
    }
  }
  co_return std::move(*w->result);
}

void SupervisorImpl::release_to(std::uint64_t waiter_id, ProfState& ps, Clock::time_point now) {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& w) { return w->id == waiter_id; });
  if (it == queue_.end()) return;
  auto w = *it;
  queue_.erase(it);
  auto s = std::make_shared<LeaseShared>();
  s->id = next_id_++;
  s->profile = w->profile;
  s->child = ps.profile->name;
  s->endpoint = ps.endpoint;
  s->owner = weak_from_this();
  ps.leases[s->id] = s;
  ++ps.in_flight;
  // The part of the wait spent bringing the child up (0 when it was already ready).
  std::int64_t switch_ms = ps.became_ready_at > w->enqueued ? ms(ps.became_ready_at - w->enqueued) : 0;
  const auto lora = lora_of_.find(w->profile);
  w->result.emplace(Lease(std::move(s), ms(now - w->enqueued), switch_ms,
                          lora != lora_of_.end() ? lora->second : std::vector<std::pair<std::string, double>>{}));
  w->timer.cancel();
}

void SupervisorImpl::on_release(const std::string& child, std::uint64_t lease_id) {
  auto it = profs_.find(child);
  if (it == profs_.end() || it->second.leases.erase(lease_id) == 0) return;  // cut earlier
  --it->second.in_flight;
  reschedule();
}

void SupervisorImpl::fail_queued(const std::string& child, const Error& e) {
  std::deque<std::shared_ptr<Waiter>> keep;
  for (auto& w : queue_) {
    if (w->child == child) {
      w->result.emplace(e);
      w->timer.cancel();
    } else {
      keep.push_back(w);
    }
  }
  queue_.swap(keep);
}

void SupervisorImpl::cut_leases(ProfState& ps, const Error& e) {
  for (auto& [id, weak] : ps.leases) {
    if (auto s = weak.lock()) {
      s->crash = e;
      s->crashed.store(true, std::memory_order_release);
    }
  }
  ps.leases.clear();
  ps.in_flight = 0;
}

// ---- scheduling ----------------------------------------------------------------------------

SchedInput SupervisorImpl::sched_input(Clock::time_point now) const {
  SchedInput in;
  in.cfg = cfg_.orch.scheduling;
  in.now = now;
  for (const auto& set : opts_.allowed_sets) {  // in child names: a group member stands for its child
    std::vector<std::string> children;
    for (const auto& name : set) {
      const auto& c = child_of(name);
      if (std::find(children.begin(), children.end(), c) == children.end()) children.push_back(c);
    }
    in.allowed_sets.push_back(std::move(children));
  }
  for (const auto& [name, ps] : profs_) {
    if (ps.not_before > now) in.not_before[name] = ps.not_before;
    if (ps.phase == Phase::none) continue;
    SchedChild c;
    c.profile = name;
    c.phase = ps.phase == Phase::starting ? SchedChild::Phase::starting
              : ps.phase == Phase::ready  ? SchedChild::Phase::ready
                                          : SchedChild::Phase::stopping;
    c.in_flight = ps.in_flight;
    c.parallel = std::max(1, ps.profile->parallel);
    c.ready_since = ps.ready_since;
    c.draining_since = ps.draining_since;
    in.children.push_back(c);
  }
  for (const auto& w : queue_) in.queue.push_back({w->id, w->child, w->enqueued});
  return in;
}

void SupervisorImpl::reschedule() {
  if (shutting_down_) return;
  auto now = Clock::now();
  Decision d = decide(sched_input(now));
  for (const auto& a : d.actions) apply(a, now);
  // Warm switches (docs/warm.md): the oldest waiter's model is likely next; the effects prefetch it.
  if (!queue_.empty()) {
    const auto it = profs_.find(child_of(queue_.front()->profile));
    if (it != profs_.end() && it->second.phase == Phase::none) effects_->likely_next(queue_.front()->profile);
  }
  if (d.wake_at) {
    wake_.expires_at(*d.wake_at);
    wake_.async_wait([w = weak_from_this()](boost::system::error_code ec) {
      if (auto self = w.lock(); self && !ec) self->reschedule();
    });
  } else {
    wake_.cancel();
  }
}

void SupervisorImpl::apply(const Action& a, Clock::time_point now) {
  auto& ps = profs_[a.profile];
  switch (a.kind) {
    case Action::Kind::release:
      release_to(a.request, ps, now);
      break;
    case Action::Kind::start:
      if (!switch_) begin_switch("", now);
      ps.phase = Phase::starting;
      ++ps.starts;
      asio::co_spawn(strand_, do_start(a.profile, ++ps.gen), asio::detached);
      break;
    case Action::Kind::drain:
      if (!switch_) begin_switch(a.profile, now);
      switch_->drain_start = now;
      ps.draining_since = now;
      break;
    case Action::Kind::stop:
      if (!switch_) begin_switch(a.profile, now);
      if (switch_->drain_start) switch_->rec.drain_ms = ms(now - *switch_->drain_start);
      if (ps.in_flight > 0)
        cut_leases(ps, make_error(Errc::child_crashed, a.profile + ": stopped after drain_timeout_s"));
      ps.phase = Phase::stopping;
      asio::co_spawn(strand_, do_stop(a.profile), asio::detached);
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

asio::awaitable<void> SupervisorImpl::do_start(std::string name, std::uint64_t gen) {
  auto self = shared_from_this();
  auto& ps = profs_[name];
  StartOutcome out = co_await effects_->start(*ps.profile, exit_callback(name, gen));
  auto now = Clock::now();
  if (ps.gen != gen || shutting_down_) co_return;  // shutdown stopped it meanwhile
  finish_switch(name, out, now);
  if (out.ok()) {
    ps.phase = Phase::ready;
    ps.endpoint = out.report->endpoint;
    ps.pid = out.report->pid;
    ps.ready_since = now;
    ps.became_ready_at = now;
    ps.draining_since.reset();
    if (opts_.on_ready) opts_.on_ready(*ps.profile, *out.report);
  } else {
    ps.phase = Phase::none;
    ps.last_failure = out.failure;
    spdlog::error("{}: start failed [{}]: {}", name, to_string(out.failure.kind), out.failure.message);
    note_failure(ps, now);
    fail_queued(name, prefixed(out.failure.to_error(errc_for(out.failure.kind)), name));
  }
  notify_watchers();
  reschedule();
}

asio::awaitable<void> SupervisorImpl::do_stop(std::string name) {
  auto self = shared_from_this();
  StopReport rep = co_await effects_->stop(name);
  auto& ps = profs_[name];
  if (switch_ && switch_->rec.from == name) {
    switch_->rec.stop_ms += rep.stop_ms;
    switch_->rec.vram_wait_ms += rep.vram_wait_ms;
    switch_->rec.save_ms += rep.save_ms;
  }
  if (rep.killed) spdlog::warn("{}: needed SIGKILL after stop.grace_s", name);
  ps.phase = Phase::none;
  ps.draining_since.reset();
  ps.pid = 0;
  notify_watchers();
  reschedule();
}

void SupervisorImpl::on_child_exit(const std::string& name, std::uint64_t gen, ChildFailure f) {
  auto& ps = profs_[name];
  if (ps.gen != gen || ps.phase != Phase::ready) return;  // stopping or superseded: expected
  auto now = Clock::now();
  ++ps.crashes;
  Error e = prefixed(f.to_error(Errc::child_crashed), name);
  cut_leases(ps, e);
  ps.last_failure = std::move(f);
  note_failure(ps, now);
  ps.phase = Phase::stopping;  // clean up the dead child's pipes before any restart
  asio::co_spawn(strand_, do_stop(name), asio::detached);
}

// Crash-loop accounting: exponential backoff, then `failed` for cooldown_s.
void SupervisorImpl::note_failure(ProfState& ps, Clock::time_point now) {
  const auto& r = ps.profile->restart;
  ps.failures.push_back(now);
  while (!ps.failures.empty() && ps.failures.front() < now - std::chrono::seconds(r.window_s))
    ps.failures.pop_front();
  auto n = static_cast<int>(ps.failures.size());
  if (n > r.max_restarts) {
    ps.failed_until = now + std::chrono::seconds(r.cooldown_s);
    ps.failures.clear();
    spdlog::error("{}: {} failures within {} s; marked failed for {} s", ps.profile->name, n, r.window_s,
                  r.cooldown_s);
    Error e = ps.last_failure ? ps.last_failure->to_error(Errc::profile_failed) : Error{};
    e.code = Errc::profile_failed;
    e.message = ps.profile->name + ": failed after repeated crashes (last: " + e.message + ")";
    e.retry_after_s = r.cooldown_s;
    fail_queued(ps.profile->name, e);
    return;
  }
  std::int64_t backoff = r.backoff_initial_ms;
  for (int i = 1; i < n && backoff < r.backoff_max_s * 1000LL; ++i) backoff *= 2;
  ps.not_before = now + milliseconds(std::min<std::int64_t>(backoff, r.backoff_max_s * 1000LL));
}

// ---- switch records ------------------------------------------------------------------------

void SupervisorImpl::begin_switch(const std::string& from, Clock::time_point now) {
  switch_.emplace();
  switch_->rec.from = from;
  switch_->rec.at = std::chrono::system_clock::now();
  switch_->started = now;
}

void SupervisorImpl::finish_switch(const std::string& to, const StartOutcome& out, Clock::time_point now) {
  if (!switch_) return;
  SwitchRecord rec = switch_->rec;
  auto started = switch_->started;
  switch_.reset();
  rec.to = to;
  rec.total_ms = ms(now - started);
  rec.ok = out.ok();
  if (out.ok()) {
    rec.spawn_to_listening_ms = out.report->spawn_to_listening_ms;
    rec.detect_ms = out.report->detect_ms;
    rec.prefetch_resident_pct = out.report->prefetch_resident_pct;
    rec.restore_ms = out.report->restore_ms;
  } else {
    rec.error = out.failure.message;
  }
  spdlog::info("switch from={} to={} ok={} drain_ms={} stop_ms={} vram_wait_ms={} spawn_to_listening_ms={} "
               "detect_ms={} total_ms={} save_ms={} restore_ms={} prefetch_resident_pct={:.0f}",
               rec.from.empty() ? "-" : rec.from, rec.to, rec.ok, rec.drain_ms, rec.stop_ms, rec.vram_wait_ms,
               rec.spawn_to_listening_ms, rec.detect_ms, rec.total_ms, rec.save_ms, rec.restore_ms,
               rec.prefetch_resident_pct);
  switches_.push_back(rec);
  while (switches_.size() > opts_.switch_history) switches_.pop_front();
  if (on_switch_) on_switch_(rec);
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

asio::awaitable<Status> SupervisorImpl::unload() {
  auto self = shared_from_this();
  auto now = Clock::now();
  for (auto& [name, ps] : profs_)
    if (ps.phase == Phase::ready && !ps.draining_since) ps.draining_since = now;
  reschedule();
  auto busy = [&] {
    return std::any_of(profs_.begin(), profs_.end(), [](const auto& kv) {
      return kv.second.phase == Phase::stopping || (kv.second.phase == Phase::ready && kv.second.draining_since);
    });
  };
  while (busy()) co_await wait_change();
  co_return ok_status();
}

asio::awaitable<Snapshot> SupervisorImpl::snapshot() {
  auto now = Clock::now();
  Snapshot s;
  s.shutting_down = shutting_down_;
  s.queued = queue_.size();
  for (const auto& [name, child] : child_of_) {  // per profile; a group's members share one child
    const auto& ps = profs_.at(child);
    ProfileStatus st;
    st.name = name;
    st.state = ps.phase == Phase::starting ? ChildState::starting
               : ps.phase == Phase::ready  ? ChildState::ready
               : ps.phase == Phase::stopping ? ChildState::stopping
               : now < ps.failed_until     ? ChildState::failed
                                           : ChildState::stopped;
    st.pid = ps.pid;
    st.port = ps.phase == Phase::ready ? ps.endpoint.port : 0;
    st.in_flight = ps.in_flight;
    st.queued = static_cast<int>(std::count_if(queue_.begin(), queue_.end(),
                                                [&](const auto& w) { return w->profile == name; }));
    st.restarts_in_window = static_cast<int>(ps.failures.size());
    st.total_restarts = std::max(0, ps.starts - 1);
    st.crashes = ps.crashes;
    st.last_failure = ps.last_failure;
    if (now < ps.failed_until)
      st.retry_after_s = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(ps.failed_until - now).count());
    s.profiles.push_back(std::move(st));
  }
  s.recent_switches.assign(switches_.begin(), switches_.end());
  co_return s;
}

asio::awaitable<void> SupervisorImpl::shutdown() {
  auto self = shared_from_this();
  shutting_down_ = true;
  wake_.cancel();
  std::deque<std::shared_ptr<Waiter>> waiting;
  waiting.swap(queue_);
  for (auto& w : waiting) {
    w->result.emplace(make_error(Errc::unavailable, "shutting down"));
    w->timer.cancel();
  }
  for (auto& [name, ps] : profs_) {
    if (ps.phase == Phase::none) continue;
    cut_leases(ps, make_error(Errc::unavailable, name + ": stopped by shutdown"));
    ++ps.gen;  // a start in flight is abandoned
    ps.phase = Phase::stopping;
    co_await effects_->stop(name);
    ps.phase = Phase::none;
    ps.pid = 0;
  }
  notify_watchers();
}

}  // namespace kevlaya::supervisor
