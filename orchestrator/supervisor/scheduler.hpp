// Scheduler: a pure function from "what is alive, what is queued, what time it is" to the next
// actions. No asio, no processes, no clocks of its own: tests drive it with plain values.
//
// Policy:
//  - FIFO within a model; a ready child gets queued requests for it up to `parallel` in flight.
//  - The oldest queued request whose model has no live child names the target T; the next such
//    models are targets too when they may co-reside with the earlier targets (e.g. on another GPU:
//    per-device rotation is expressed as allowed sets), so one device's switch never waits for
//    another's, and each target's starvation guard counts from its own oldest request.
//  - T starts as soon as no live child conflicts with it (allowed co-resident sets).
//  - A conflicting child V with nothing queued and nothing in flight is swapped out at once.
//  - A conflicting child V that still has work (queued or in flight) keeps serving until T's oldest
//    request has waited max_wait_before_swap_ms (starvation guard; grouping saves swaps meanwhile;
//    counted from V's ready time when T queued while V loaded) and V has been ready for
//    min_residency_ms (anti-thrash). V's requests queued before T's oldest are served before V
//    goes (FIFO), so a stopped child is never the next target: no child restarts to serve itself.
//  - Cost-aware eviction: between allowed sets that keep as many live children with as little work
//    outside, the one whose victims are cheapest to bring back (reload_cost_s) goes; the stop says
//    why (Action::reason).
//  - A protected child (evict: protect) is not evicted while it is in use: a conflicting request
//    waits until it has been idle for its idle time, and never longer than its max_wait after that
//    request arrived (the guard of a protected child); a request whose deadline falls before the
//    child's earliest release is refused at once (Action::Kind::refuse, with the time to retry).
//  - Swapping out drains first: V gets no new requests (sticky) and is stopped once its in-flight
//    count is 0, or when draining has lasted drain_timeout_s (then in-flight requests are cut).
//  - A restart backoff (not_before) delays starting T.
//  - Idle unload: a ready child with nothing queued or in flight is unloaded (stopped) at its
//    idle_deadline; nullopt = never (pinned, idle_unload_s 0).
//  - Wanted children (pins, preloads) start when no queued request names a target and nothing
//    alive conflicts with them; they never evict anyone.
//  - Switch ahead: when the calls alternate strictly between two models (`ahead`, from
//    predict_alternation) and nothing is queued, the next one starts as soon as every child in its
//    way is idle: those are stopped at once (never a wanted one). A wrong guess costs one switch.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "supervisor/phase.hpp"

namespace kevlaya::supervisor {

using SchedClock = std::chrono::steady_clock;

struct SchedChild {
  std::string child;  // its name: a profile's, or a shared base's ("kev+laya")
  Phase phase = Phase::starting;  // an alive phase: starting, ready, draining or stopping
  int in_flight = 0;
  int parallel = 1;
  SchedClock::time_point ready_since{};
  std::optional<SchedClock::time_point> draining_since;  // set while phase == draining
  // Ready and idle: unload at this time (the supervisor sets it only with in_flight == 0).
  std::optional<SchedClock::time_point> idle_deadline;
  SchedClock::time_point idle_since{};  // ready, or its last request ended (when in_flight == 0)
  double reload_cost_s = 0;             // what bringing it back would cost (its recent loads); 0 = unknown
  struct Protection {
    SchedClock::duration idle{};      // evictable once idle this long
    SchedClock::duration max_wait{};  // ... or once a conflicting request has waited this long
  };
  std::optional<Protection> protection{};  // evict: protect
};

struct SchedRequest {
  std::uint64_t id = 0;
  std::string child;  // the child that serves the request's profile
  SchedClock::time_point enqueued{};
  std::optional<SchedClock::time_point> deadline{};  // it fails when not served by then
};

struct SchedInput {
  std::vector<SchedChild> children;  // every alive child (starting, ready, draining, stopping)
  std::vector<SchedRequest> queue;   // in arrival order
  std::vector<std::vector<std::string>> allowed_sets;  // may co-reside; empty = one at a time
  std::map<std::string, SchedClock::time_point> not_before;  // restart backoff per child
  std::vector<std::string> wanted;   // keep started when nothing conflicts (pins, preloads)
  std::optional<std::string> ahead;  // predicted next model (switch ahead); none = do not guess
  config::SchedulingCfg cfg;
  SchedClock::time_point now{};
};

// Why a child is drained or stopped to make room (shown in switch records and /events).
inline constexpr const char* kEvictIdle = "idle";                       // it had no work
inline constexpr const char* kEvictGuard = "starvation guard";          // it had work; the guard ran out
inline constexpr const char* kEvictCheapest = "cheapest to reload";     // another set would have cost more
inline constexpr const char* kEvictProtectIdle = "protection: idle";    // protected, idle long enough
inline constexpr const char* kEvictProtectWait = "protection: max_wait";  // protected, its bound reached

struct Action {
  // unload: stop an idle child; refuse: fail a queued request that cannot wait for a protected child.
  enum class Kind { release, start, drain, stop, unload, refuse };
  Kind kind = Kind::release;
  std::string child;
  std::uint64_t request = 0;  // release and refuse
  bool ahead = false;         // start/stop of a switch ahead (a guess, no call named the model)
  std::string reason{};       // drain/stop to make room: why this child (kEvict*); refuse: why
  SchedClock::duration retry_after{};  // refuse: when the protected child may go
  // Equal in what is done (kind, child, request, guess); the reason is what the tests ask of it.
  bool operator==(const Action& o) const {
    return kind == o.kind && child == o.child && request == o.request && ahead == o.ahead;
  }
};

struct Decision {
  std::vector<Action> actions;
  std::optional<SchedClock::time_point> wake_at;  // decide again then, even without an event
};

// The next actions for the given state (pure, deterministic).
Decision decide(const SchedInput& in);

// The model the next call will name when the last four calls alternated strictly between two
// models (B, A, B, A -> B); none otherwise. `recent` is in arrival order, oldest first.
std::optional<std::string> predict_alternation(const std::vector<std::string>& recent);

// True when `children` may all be alive at once under `allowed_sets` (empty = at most one).
bool may_coreside(const std::vector<std::string>& children,
                  const std::vector<std::vector<std::string>>& allowed_sets);

}  // namespace kevlaya::supervisor
