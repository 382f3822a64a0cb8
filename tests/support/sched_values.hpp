// Plain-value helpers for the scheduler tests (supervisor/test_scheduler.cpp, test_switch_ahead.cpp).
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "supervisor/scheduler.hpp"

namespace kevlaya::test {

using namespace std::chrono_literals;
using supervisor::Action;
using supervisor::Decision;
using supervisor::Phase;
using supervisor::SchedChild;
using supervisor::SchedClock;
using supervisor::SchedInput;

inline const SchedClock::time_point t0 = SchedClock::time_point{} + 1000s;

// Starvation guard 2 s, anti-thrash 0.5 s, drain 60 s, now = t0.
inline SchedInput base() {
  SchedInput in;
  in.cfg.max_wait_before_swap_ms = 2000;
  in.cfg.min_residency_ms = 500;
  in.cfg.drain_timeout_s = 60;
  in.now = t0;
  return in;
}

// A child of `p` in `phase` (ready since t0 - 10 s unless `since` says otherwise).
inline SchedChild child(const std::string& p, Phase phase, int in_flight = 0, int parallel = 1,
                        SchedClock::time_point since = t0 - 10s) {
  SchedChild c;
  c.child = p;
  c.phase = phase;
  c.in_flight = in_flight;
  c.parallel = parallel;
  c.ready_since = since;
  c.idle_since = since;
  return c;
}

inline SchedChild ready(const std::string& p, int in_flight = 0, int parallel = 1,
                        SchedClock::time_point since = t0 - 10s) {
  return child(p, Phase::ready, in_flight, parallel, since);
}

inline std::vector<Action> of_kind(const Decision& d, Action::Kind k) {
  std::vector<Action> out;
  for (const auto& a : d.actions)
    if (a.kind == k) out.push_back(a);
  return out;
}

// The one action of `d` (the test stops when there is not exactly one).
inline Action only(const Decision& d) {
  REQUIRE(d.actions.size() == 1);
  return d.actions[0];
}

}  // namespace kevlaya::test
