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
//    request has waited max_wait_before_swap_ms (starvation guard; grouping saves swaps meanwhile)
//    and V has been ready for min_residency_ms (anti-thrash).
//  - Swapping out drains first: V gets no new requests (sticky) and is stopped once its in-flight
//    count is 0, or when draining has lasted drain_timeout_s (then in-flight requests are cut).
//  - A restart backoff (not_before) delays starting T.
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
  std::string profile;
  Phase phase = Phase::starting;  // an alive phase: starting, ready, draining or stopping
  int in_flight = 0;
  int parallel = 1;
  SchedClock::time_point ready_since{};
  std::optional<SchedClock::time_point> draining_since;  // set while phase == draining
};

struct SchedRequest {
  std::uint64_t id = 0;
  std::string profile;  // resolved profile name
  SchedClock::time_point enqueued{};
};

struct SchedInput {
  std::vector<SchedChild> children;  // every alive child (starting, ready, draining, stopping)
  std::vector<SchedRequest> queue;   // in arrival order
  std::vector<std::vector<std::string>> allowed_sets;  // may co-reside; empty = one at a time
  std::map<std::string, SchedClock::time_point> not_before;  // restart backoff per profile
  config::SchedulingCfg cfg;
  SchedClock::time_point now{};
};

struct Action {
  enum class Kind { release, start, drain, stop };
  Kind kind = Kind::release;
  std::string profile;
  std::uint64_t request = 0;  // release only
  bool operator==(const Action&) const = default;
};

struct Decision {
  std::vector<Action> actions;
  std::optional<SchedClock::time_point> wake_at;  // decide again then, even without an event
};

// The next actions for the given state (pure, deterministic).
Decision decide(const SchedInput& in);

// True when `profiles` may all be alive at once under `allowed_sets` (empty = at most one).
bool may_coreside(const std::vector<std::string>& profiles,
                  const std::vector<std::vector<std::string>>& allowed_sets);

}  // namespace kevlaya::supervisor
