// Cost-aware eviction (issue 33): which child makes room, why, and protected children (evict:
// protect). Plain values through decide(): no processes, no sleeps.
#include <catch2/catch.hpp>

#include "support/sched_values.hpp"

using namespace kevlaya::supervisor;
using namespace kevlaya::test;
using namespace std::chrono_literals;
using K = Action::Kind;

namespace {

// Two small models that fit together, or either beside the target (one GPU): a | b | a+b, a+t, b+t.
SchedInput two_beside_one() {
  auto in = base();
  in.allowed_sets = {{"a", "b"}, {"a", "t"}, {"b", "t"}};
  in.children = {ready("a"), ready("b")};
  in.queue = {{1, "t", t0}};
  return in;
}

SchedChild protected_child(const std::string& p, int in_flight, SchedClock::time_point idle_since) {
  auto c = ready(p, in_flight);
  c.idle_since = idle_since;
  c.protection = SchedChild::Protection{30s, 60s};
  return c;
}

}  // namespace

TEST_CASE("eviction: between sets that keep as many, the child cheapest to reload goes, and says so") {
  auto in = two_beside_one();
  in.children[0].reload_cost_s = 9.0;  // a: a large prompt cache and a slow load
  in.children[1].reload_cost_s = 1.5;
  auto d = decide(in);
  REQUIRE(d.actions.size() == 1);
  CHECK(d.actions[0] == Action{K::stop, "b", 0});
  CHECK(d.actions[0].reason == kEvictCheapest);

  SECTION("the other way round") {
    std::swap(in.children[0].reload_cost_s, in.children[1].reload_cost_s);
    const auto a = only(decide(in));
    CHECK(a == Action{K::stop, "a", 0});
    CHECK(a.reason == kEvictCheapest);
  }
  SECTION("costs unknown: the first set that keeps as many, for being idle") {
    in.children[0].reload_cost_s = in.children[1].reload_cost_s = 0;
    const auto a = only(decide(in));
    CHECK(a.reason == kEvictIdle);
  }
}

TEST_CASE("eviction: a busy resident cut by the starvation guard says so, an idle one says idle") {
  auto in = base();
  in.children = {ready("kev", 1)};
  in.queue = {{1, "laya", t0 - 3s}};  // waited past the 2 s guard
  const auto drain = of_kind(decide(in), K::drain);
  REQUIRE(drain.size() == 1);
  CHECK(drain[0].reason == kEvictGuard);
  in.children[0].in_flight = 0;
  const auto stop = only(decide(in));
  CHECK(stop == Action{K::stop, "kev", 0});
  CHECK(stop.reason == kEvictIdle);
}

TEST_CASE("eviction: a protected child in use is not evicted by a stray request until its max_wait") {
  auto in = base();
  in.children = {protected_child("kev", 1, t0 - 10s)};
  in.queue = {{1, "laya", t0 - 5s}, {2, "kev", t0 - 1s}};  // laya waited past the guard; kev keeps coming
  auto d = decide(in);
  CHECK(of_kind(d, K::drain).empty());
  CHECK(of_kind(d, K::stop).empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 - 5s + 60s);  // the protected child's bound, from the stray request

  SECTION("at its max_wait it drains, and says why") {
    in.now = t0 + 55s;
    const auto drain = of_kind(decide(in), K::drain);
    REQUIRE(drain.size() == 1);
    CHECK(drain[0].reason == kEvictProtectWait);
  }
}

TEST_CASE("eviction: a protected child goes once idle for its idle time, not before") {
  auto in = base();
  in.children = {protected_child("kev", 0, t0 - 10s)};  // idle for 10 s of its 30
  in.queue = {{1, "laya", t0}};
  auto d = decide(in);
  CHECK(d.actions.empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 20s);

  in.now = t0 + 20s;
  const auto a = only(decide(in));
  CHECK(a == Action{K::stop, "kev", 0});
  CHECK(a.reason == kEvictProtectIdle);
}

TEST_CASE("eviction: a request whose deadline falls before a protected child may go is refused with the time to retry") {
  auto in = base();
  in.children = {protected_child("kev", 1, t0 - 10s)};
  in.queue = {{1, "laya", t0, t0 + 10s}, {2, "laya", t0, t0 + 600s}};
  const auto refused = of_kind(decide(in), K::refuse);
  REQUIRE(refused.size() == 1);  // the one that can wait stays queued
  CHECK(refused[0].request == 1);
  CHECK(refused[0].retry_after == 60s);  // the bound from the oldest laya request
}

TEST_CASE("eviction: a switch ahead never evicts a protected child") {
  auto in = base();
  in.children = {protected_child("kev", 0, t0 - 100s)};
  in.ahead = "laya";
  CHECK(decide(in).actions.empty());
  in.children[0].protection.reset();
  CHECK(only(decide(in)) == Action{K::stop, "kev", 0, true});
}

TEST_CASE("eviction: a protected child's max_wait never cuts a residency shorter than the starvation guard") {
  auto in = base();
  in.children = {protected_child("kev", 1, t0 - 10s)};
  in.children[0].protection->max_wait = 1s;  // shorter than the 2 s guard
  in.queue = {{1, "laya", t0 - 1500ms}};
  auto d = decide(in);
  CHECK(of_kind(d, K::drain).empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 500ms);  // the guard's 2 s from the request, not max_wait's 1 s
}
