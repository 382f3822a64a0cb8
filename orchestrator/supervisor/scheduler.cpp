#include "supervisor/scheduler.hpp"

#include <algorithm>
#include <set>

namespace kevlaya::supervisor {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool contains(const std::vector<std::string>& set, const std::string& name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

void earliest(std::optional<SchedClock::time_point>& wake, SchedClock::time_point t) {
  if (!wake || t < *wake) wake = t;
}

bool has_queued(const SchedInput& in, const std::string& child) {
  return std::any_of(in.queue.begin(), in.queue.end(),
                     [&](const SchedRequest& r) { return r.child == child; });
}

bool has_queued_before(const SchedInput& in, const std::string& child, SchedClock::time_point t) {
  return std::any_of(in.queue.begin(), in.queue.end(),
                     [&](const SchedRequest& r) { return r.child == child && r.enqueued < t; });
}

// Live children that must go for `target` to start: those outside the allowed set that contains
// the target and keeps the most of what is alive now; between sets that keep as many, the one
// whose victims have the least work (in flight or queued), so an idle child goes before a busy one,
// then the one whose victims are cheapest to bring back (`by_cost`: that decided it).
struct Victims {
  std::vector<const SchedChild*> children;
  bool by_cost = false;
};

Victims victims_for(const SchedInput& in, const std::string& target) {
  std::vector<const std::string*> busy;  // live children with work, found once (sets may be many)
  for (const auto& c : in.children)
    if (c.in_flight > 0 || has_queued(in, c.child)) busy.push_back(&c.child);
  const auto busy_outside = [&](const std::vector<std::string>& set) {
    return static_cast<std::size_t>(std::count_if(busy.begin(), busy.end(), [&](const std::string* p) { return !contains(set, *p); }));
  };
  const auto cost_outside = [&](const std::vector<std::string>& set) {
    double sum = 0;
    for (const auto& c : in.children)
      if (!contains(set, c.child)) sum += c.reload_cost_s;
    return sum;
  };
  const std::vector<std::string>* best = nullptr;
  std::size_t best_overlap = 0, best_busy = 0;
  double best_cost = 0;
  bool by_cost = false;
  for (const auto& set : in.allowed_sets) {
    if (!contains(set, target)) continue;
    std::size_t overlap = 0;
    for (const auto& c : in.children) overlap += contains(set, c.child) ? 1 : 0;
    const std::size_t busy = busy_outside(set);
    const double cost = cost_outside(set);
    const bool tie = best && overlap == best_overlap && busy == best_busy;
    if (tie && cost != best_cost) by_cost = true;
    if (!best || overlap > best_overlap || (overlap == best_overlap && busy < best_busy) || (tie && cost < best_cost)) {
      best = &set;
      best_overlap = overlap;
      best_busy = busy;
      best_cost = cost;
    }
  }
  Victims out;
  out.by_cost = by_cost;
  for (const auto& c : in.children)
    if (!best || !contains(*best, c.child)) out.children.push_back(&c);
  return out;
}

struct Target {
  std::string child;
  SchedClock::time_point head_enqueued;
};

// Distinct models without a live child, in the order of their oldest queued request.
std::vector<Target> pick_targets(const SchedInput& in) {
  std::vector<Target> out;
  for (const auto& r : in.queue) {
    const bool live = std::any_of(in.children.begin(), in.children.end(),
                                  [&](const SchedChild& c) { return c.child == r.child; });
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Target& t) { return t.child == r.child; });
    if (!live && !seen) out.push_back(Target{r.child, r.enqueued});
  }
  return out;
}

// A protected child's earliest release for a target whose oldest request queued at `head`: once
// idle for its idle time (not before it is idle), and at the latest max_wait after `head`.
SchedClock::time_point protected_until(const SchedChild& v, SchedClock::time_point head, bool has_work) {
  const auto bound = head + v.protection->max_wait;
  return has_work ? bound : std::min(bound, v.idle_since + v.protection->idle);
}

// Requests for `t` whose deadline falls before `until` cannot wait for the protected child: refused.
void refuse_hurried(const SchedInput& in, const Target& t, SchedClock::time_point until, Decision& d) {
  for (const auto& r : in.queue) {
    if (r.child != t.child || !r.deadline || *r.deadline >= until) continue;
    Action a{Action::Kind::refuse, r.child, r.id};
    a.reason = "protected";
    a.retry_after = until - in.now;
    d.actions.push_back(std::move(a));
  }
}

// How long V, with work, keeps serving before T: until T's oldest request has waited
// max_wait_before_swap_ms (starvation guard), and V has been ready min_residency_ms (anti-thrash).
// The guard counts from when V became ready if T queued before that: time spent loading V served
// nobody, and counting it cut every residency after a load longer than the guard to
// min_residency_ms (thrash). With no competition for V there is nothing to protect: the switch
// starts at once.
SchedClock::time_point guard_until(const config::SchedulingCfg& cfg, const SchedChild& v, const Target& t) {
  const auto resident_until = v.ready_since + milliseconds(cfg.min_residency_ms);
  const auto forced_at = std::max(t.head_enqueued, v.ready_since) + milliseconds(cfg.max_wait_before_swap_ms);
  return std::max(resident_until, forced_at);
}

// Decides what to do with one child that stands in the target's way. Returns true when the child
// must receive no new requests (draining or about to stop). `why` is the reason a stop would give.
bool evict_step(const SchedInput& in, const SchedChild& v, const Target& t, std::string why, Decision& d) {
  if (v.phase == Phase::starting || v.phase == Phase::stopping)
    return v.phase == Phase::stopping;  // wait for its event
  const auto& cfg = in.cfg;
  const bool draining = v.phase == Phase::draining;
  // FIFO across models: V's requests queued before T's oldest are served first. Evicting V before
  // them made V the oldest waiting model the moment it was gone: a restart of the model it served.
  if (!draining && has_queued_before(in, v.child, t.head_enqueued)) return false;
  const bool has_work = has_queued(in, v.child) || v.in_flight > 0;
  if (!draining && (has_work || v.protection)) {
    // Work for V is queued or in flight: V keeps serving (grouping) until the guard (guard_until).
    // Protected V: also no eviction while in use, nor until idle for its idle time; its max_wait
    // bounds that, never below the guard.
    auto until = has_work ? guard_until(cfg, v, t) : in.now;
    if (v.protection) until = std::max(until, protected_until(v, t.head_enqueued, has_work));
    if (in.now < until) {
      earliest(d.wake_at, until);
      if (v.protection) refuse_hurried(in, t, until, d);
      return false;
    }
    if (v.protection) why = in.now >= t.head_enqueued + v.protection->max_wait ? kEvictProtectWait : kEvictProtectIdle;
    else if (why != kEvictCheapest) why = kEvictGuard;
  }
  if (v.in_flight == 0) {
    d.actions.push_back({Action::Kind::stop, v.child, 0, false, why});
    return true;
  }
  auto drain_start = draining ? v.draining_since.value_or(in.now) : in.now;
  auto drain_end = drain_start + seconds(cfg.drain_timeout_s);
  if (!draining) d.actions.push_back({Action::Kind::drain, v.child, 0, false, why});
  if (in.now >= drain_end) {
    d.actions.push_back({Action::Kind::stop, v.child, 0, false, why});  // drain bounded: cut in-flight
  } else {
    earliest(d.wake_at, drain_end);
  }
  return true;
}

void release_ready(const SchedInput& in, const std::set<std::string>& closed, Decision& d) {
  for (const auto& c : in.children) {
    if (c.phase != Phase::ready || closed.count(c.child)) continue;
    int free_slots = c.parallel - c.in_flight;
    for (const auto& r : in.queue) {
      if (free_slots <= 0) break;
      if (r.child != c.child) continue;
      d.actions.push_back({Action::Kind::release, c.child, r.id});
      --free_slots;
    }
  }
}

// Idle children whose deadline has passed are unloaded; the next deadline wakes the caller.
void unload_idle(const SchedInput& in, std::set<std::string>& closed, Decision& d) {
  for (const auto& c : in.children) {
    if (c.phase != Phase::ready || !c.idle_deadline || c.in_flight > 0 || closed.count(c.child) ||
        has_queued(in, c.child))
      continue;
    if (in.now >= *c.idle_deadline) {
      d.actions.push_back({Action::Kind::unload, c.child, 0});
      closed.insert(c.child);
    } else {
      earliest(d.wake_at, *c.idle_deadline);
    }
  }
}

// Wanted children that are down start when they fit beside everything alive (and started now).
void start_wanted(const SchedInput& in, Decision& d) {
  std::vector<std::string> resident;
  for (const auto& c : in.children) resident.push_back(c.child);
  for (const auto& w : in.wanted) {
    if (std::find(resident.begin(), resident.end(), w) != resident.end()) continue;
    const auto gate = in.not_before.find(w);
    if (gate != in.not_before.end() && in.now < gate->second) {
      earliest(d.wake_at, gate->second);
      continue;
    }
    resident.push_back(w);
    if (!may_coreside(resident, in.allowed_sets)) {
      resident.pop_back();
      continue;
    }
    d.actions.push_back({Action::Kind::start, w, 0});
  }
}

// Switch ahead (nothing queued, no other action this round): the predicted model starts once
// nothing in its way is alive; idle children in its way are stopped now, one already stopping is
// waited for. Anything in the way that is busy, starting, draining or wanted: no guess.
void switch_ahead(const SchedInput& in, Decision& d) {
  const std::string& next = *in.ahead;
  const bool alive = std::any_of(in.children.begin(), in.children.end(),
                                 [&](const SchedChild& c) { return c.child == next; });
  const auto gate = in.not_before.find(next);
  if (alive || (gate != in.not_before.end() && in.now < gate->second)) return;
  const auto victims = victims_for(in, next).children;
  const bool blocked = std::any_of(victims.begin(), victims.end(), [&](const SchedChild* v) {
    const bool idle = v->phase == Phase::ready && v->in_flight == 0;
    // A guess never evicts a protected child: only a request may, on its terms.
    return v->phase != Phase::stopping && (!idle || contains(in.wanted, v->child) || v->protection);
  });
  if (blocked) return;
  for (const auto* v : victims)
    if (v->phase == Phase::ready) d.actions.push_back({Action::Kind::stop, v->child, 0, true, kEvictIdle});
  if (victims.empty()) d.actions.push_back({Action::Kind::start, next, 0, true});
}

}  // namespace

std::optional<std::string> predict_alternation(const std::vector<std::string>& recent) {
  const auto n = recent.size();
  if (n < 4) return std::nullopt;
  const auto& a = recent[n - 1];
  const auto& b = recent[n - 2];
  if (a == b || recent[n - 3] != a || recent[n - 4] != b) return std::nullopt;
  return b;
}

bool may_coreside(const std::vector<std::string>& children,
                  const std::vector<std::vector<std::string>>& allowed_sets) {
  std::set<std::string> uniq(children.begin(), children.end());
  if (uniq.size() <= 1) return true;
  return std::any_of(allowed_sets.begin(), allowed_sets.end(), [&](const auto& set) {
    return std::all_of(uniq.begin(), uniq.end(), [&](const auto& p) { return contains(set, p); });
  });
}

Decision decide(const SchedInput& in) {
  Decision d;
  std::set<std::string> closed;  // children that take no new requests this round
  // Several targets advance at once when they may co-reside (other GPUs): a switch on one device
  // never waits for another's. A target that conflicts with an earlier one waits its turn (FIFO).
  std::vector<std::string> claimed;
  std::set<std::string> handled;  // victims already stepped this round
  const auto targets = pick_targets(in);
  for (const auto& target : targets) {
    auto with = claimed;
    with.push_back(target.child);
    if (!may_coreside(with, in.allowed_sets)) continue;
    claimed.push_back(target.child);
    auto gate = in.not_before.find(target.child);
    bool gated = gate != in.not_before.end() && in.now < gate->second;
    if (gated) {
      earliest(d.wake_at, gate->second);
      continue;
    }
    const auto victims = victims_for(in, target.child);
    if (victims.children.empty()) {
      d.actions.push_back({Action::Kind::start, target.child, 0});
      continue;
    }
    const std::string why = victims.by_cost ? kEvictCheapest : kEvictIdle;
    for (const auto* v : victims.children)
      if (handled.insert(v->child).second && evict_step(in, *v, target, why, d)) closed.insert(v->child);
  }
  // Draining children from earlier rounds stay closed even when the target changed.
  for (const auto& c : in.children) {
    if (c.phase == Phase::draining) {
      closed.insert(c.child);
      bool stopping = std::any_of(d.actions.begin(), d.actions.end(), [&](const Action& a) {
        return a.kind == Action::Kind::stop && a.child == c.child;
      });
      const auto drain_end = c.draining_since.value_or(in.now) + seconds(in.cfg.drain_timeout_s);
      if (!stopping && (c.in_flight == 0 || in.now >= drain_end)) {
        d.actions.push_back({Action::Kind::stop, c.child, 0});
      } else if (!stopping) {
        earliest(d.wake_at, drain_end);
      }
    }
  }
  unload_idle(in, closed, d);
  if (targets.empty()) start_wanted(in, d);  // preload/pins only when no request names a target
  if (in.queue.empty() && in.ahead && d.actions.empty()) switch_ahead(in, d);
  release_ready(in, closed, d);
  return d;
}

}  // namespace kevlaya::supervisor
