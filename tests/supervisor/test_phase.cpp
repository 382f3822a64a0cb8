// The transition table of a child's Phase (supervisor/phase.hpp), checked edge by edge.
#include <catch2/catch.hpp>

#include <set>
#include <utility>

#include "supervisor/phase.hpp"

using namespace kevlaya::supervisor;

TEST_CASE("phase: the transition table allows exactly the drawn edges") {
  using P = Phase;
  const std::set<std::pair<P, P>> allowed = {
      {P::stopped, P::starting},  {P::starting, P::ready},    {P::starting, P::failed},
      {P::starting, P::stopping}, {P::ready, P::draining},    {P::ready, P::stopping},
      {P::draining, P::stopping}, {P::stopping, P::stopped},  {P::stopping, P::failed},
      {P::failed, P::starting},   {P::failed, P::stopped}};
  const P all[] = {P::stopped, P::starting, P::ready, P::draining, P::stopping, P::failed};
  for (P from : all) {
    for (P to : all) {
      INFO(to_string(from) << " -> " << to_string(to));
      const bool expected = from == to || allowed.count({from, to}) > 0;
      CHECK(transition_allowed(from, to) == expected);
    }
  }
}

// One writer of the phase: the supervisor takes a child that died while serving through stopping
// (reaped, then failed); the edges only the process's own copy of the phase used are gone.
TEST_CASE("phase: a child that dies while ready or draining is stopped before it is failed") {
  CHECK_FALSE(transition_allowed(Phase::ready, Phase::failed));
  CHECK_FALSE(transition_allowed(Phase::draining, Phase::failed));
  CHECK(transition_allowed(Phase::ready, Phase::stopping));
  CHECK(transition_allowed(Phase::draining, Phase::stopping));
  CHECK(transition_allowed(Phase::stopping, Phase::failed));
}

TEST_CASE("phase: names are the ones users see everywhere") {
  CHECK(to_string(Phase::stopped) == "stopped");
  CHECK(to_string(Phase::starting) == "starting");
  CHECK(to_string(Phase::ready) == "ready");
  CHECK(to_string(Phase::draining) == "draining");
  CHECK(to_string(Phase::stopping) == "stopping");
  CHECK(to_string(Phase::failed) == "failed");
}

TEST_CASE("phase: a ready child cannot go back to starting without stopping (bad transitions are bugs)") {
  CHECK_FALSE(transition_allowed(Phase::ready, Phase::starting));
  CHECK_FALSE(transition_allowed(Phase::draining, Phase::ready));
  CHECK_FALSE(transition_allowed(Phase::stopped, Phase::ready));
  CHECK_FALSE(transition_allowed(Phase::stopping, Phase::starting));
}

TEST_CASE("phase: alive phases are those with a process") {
  CHECK_FALSE(is_alive(Phase::stopped));
  CHECK_FALSE(is_alive(Phase::failed));
  CHECK(is_alive(Phase::starting));
  CHECK(is_alive(Phase::ready));
  CHECK(is_alive(Phase::draining));
  CHECK(is_alive(Phase::stopping));
}
