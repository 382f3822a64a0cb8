// The event stream: subscriptions, phase changes (checked against the transition table) and
// switch records, published on the supervisor's strand.
#include "supervisor/events.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "common/clock.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

std::shared_ptr<Subscription::Sub> EventHub::add(std::function<void(const Event&)> fn) {
  auto s = std::make_shared<Subscription::Sub>();
  s->fn = std::move(fn);
  std::lock_guard lock(mu_);
  subs_.push_back(s);
  return s;
}

void EventHub::remove(const std::shared_ptr<Subscription::Sub>& s) {
  std::lock_guard lock(mu_);
  subs_.erase(std::remove(subs_.begin(), subs_.end(), s), subs_.end());
}

void EventHub::publish(Event e) {
  e.at = std::chrono::system_clock::now();
  std::vector<std::shared_ptr<Subscription::Sub>> subs;
  {
    std::lock_guard lock(mu_);
    subs = subs_;
  }
  for (const auto& s : subs) {
    std::lock_guard lock(s->mu);
    if (s->fn) s->fn(e);
  }
}

Subscription::Subscription(std::weak_ptr<EventHub> hub, std::shared_ptr<Sub> sub)
    : hub_(std::move(hub)), sub_(std::move(sub)) {}

Subscription& Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    reset();
    hub_ = std::move(o.hub_);
    sub_ = std::move(o.sub_);
  }
  return *this;
}

Subscription::~Subscription() { reset(); }

void Subscription::reset() {
  if (!sub_) return;
  {
    std::lock_guard lock(sub_->mu);  // waits for a call in progress
    sub_->fn = nullptr;
  }
  if (auto hub = hub_.lock()) hub->remove(sub_);
  sub_.reset();
}

Subscription Supervisor::subscribe(std::function<void(const Event&)> fn) {
  return Subscription(impl_->events_, impl_->events_->add(std::move(fn)));
}

// ---- phases --------------------------------------------------------------------------------

void SupervisorImpl::set_phase(const std::string& name, ChildState& ps, Phase to,
                               std::optional<ChildFailure> why) {
  if (ps.phase == to) return;
  Event e;
  e.type = Event::Type::phase;
  e.child = name;
  e.from = ps.phase;
  e.to = checked_transition(ps.phase, to, name);
  e.failure = std::move(why);
  e.gpus = ps.settings().placement.devices;
  if (to == Phase::starting) {
    ps.starting_since = Clock::now();
    e.expected_load_s = expected_load_s(ps);
  }
  ps.phase = to;
  if (to == Phase::draining) ps.draining_since = Clock::now();
  else ps.draining_since.reset();
  events_->publish(std::move(e));
}

// ---- switch records ------------------------------------------------------------------------

int SupervisorImpl::switch_key(const std::string& child) const {
  const auto it = children_.find(child);
  if (it == children_.end() || it->second.settings().placement.devices.empty()) return -1;
  return it->second.settings().placement.devices.front();
}

PendingSwitch* SupervisorImpl::pending_switch(const std::string& child) {
  const auto it = switch_.find(switch_key(child));
  return it == switch_.end() ? nullptr : &it->second;
}

PendingSwitch& SupervisorImpl::switch_of(const std::string& child, const std::string& from, Clock::time_point now) {
  if (auto* pending = pending_switch(child)) return *pending;
  PendingSwitch& sw = switch_[switch_key(child)];
  sw.rec.from = from;
  sw.rec.at = std::chrono::system_clock::now();
  sw.started = now;
  return sw;
}

void SupervisorImpl::finish_switch(const std::string& to, const StartOutcome& out, Clock::time_point now) {
  const auto pending = switch_.find(switch_key(to));
  if (pending == switch_.end()) return;
  SwitchRecord rec = pending->second.rec;
  auto started = pending->second.started;
  switch_.erase(pending);
  rec.to = to;
  rec.total_ms = whole_ms(now - started);
  rec.ok = out.ok();
  if (out.ok()) {
    rec.spawn_to_listening_ms = out.report->spawn_to_listening_ms;
    rec.detect_ms = out.report->detect_ms;
    rec.prefetch_resident_pct = out.report->prefetch_resident_pct;
    rec.restore_ms = out.report->restore_ms;
  } else {
    rec.error = out.failure.message;
    rec.failure = out.failure.kind;
    rec.log_tail = out.failure.log_tail;
  }
  spdlog::info("switch from={} to={} ok={} ahead={} drain_ms={} stop_ms={} vram_wait_ms={} spawn_to_listening_ms={} "
               "detect_ms={} total_ms={} save_ms={} restore_ms={} prefetch_resident_pct={:.0f} reason=\"{}\"",
               rec.from.empty() ? "-" : rec.from, rec.to, rec.ok, rec.ahead, rec.drain_ms, rec.stop_ms, rec.vram_wait_ms,
               rec.spawn_to_listening_ms, rec.detect_ms, rec.total_ms, rec.save_ms, rec.restore_ms,
               rec.prefetch_resident_pct, rec.reason);
  switches_.push_back(rec);
  while (switches_.size() > opts_.switch_history) switches_.pop_front();
  Event e;
  e.type = Event::Type::switch_done;
  e.child = rec.to;
  e.record = std::move(rec);
  events_->publish(std::move(e));
}

}  // namespace kevlaya::supervisor
