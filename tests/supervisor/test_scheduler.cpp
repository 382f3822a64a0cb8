// Scheduler decisions with plain values: no processes, no sleeps.
#include <catch2/catch.hpp>

#include "support/sched_values.hpp"

using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using K = Action::Kind;

using namespace kevlaya::test;

TEST_CASE("scheduler: empty state does nothing") {
  auto d = decide(base());
  CHECK(d.actions.empty());
  CHECK_FALSE(d.wake_at);
}

TEST_CASE("scheduler: a request for a model with nothing alive starts it") {
  auto in = base();
  in.queue = {{1, "kev", t0}};
  auto d = decide(in);
  CHECK(only(d) == Action{K::start, "kev", 0});
}

TEST_CASE("scheduler: a ready child gets requests FIFO up to parallel") {
  auto in = base();
  in.children = {ready("kev", 1, 3)};
  in.queue = {{1, "kev", t0}, {2, "laya", t0}, {3, "kev", t0}, {4, "kev", t0}};
  in.now = t0;
  auto rel = of_kind(decide(in), K::release);
  REQUIRE(rel.size() == 2);
  CHECK(rel[0].request == 1);
  CHECK(rel[1].request == 3);
}

TEST_CASE("scheduler: a starting child makes requests wait without actions") {
  auto in = base();
  in.children = {ready("kev")};
  in.children[0].phase = Phase::starting;
  in.queue = {{1, "kev", t0}};
  CHECK(decide(in).actions.empty());
}

TEST_CASE("scheduler: idle resident model is swapped out for a waiting one") {
  auto in = base();
  in.children = {ready("kev")};
  in.queue = {{1, "laya", t0}};
  auto d = decide(in);
  CHECK(only(d) == Action{K::stop, "kev", 0});
}

TEST_CASE("scheduler: never starts a second model while the first is alive (one at a time)") {
  auto in = base();
  in.children = {ready("kev")};
  in.children[0].phase = Phase::stopping;
  in.queue = {{1, "laya", t0}};
  CHECK(decide(in).actions.empty());
}

TEST_CASE("scheduler: min_residency prevents thrash while the resident model has work") {
  auto in = base();
  in.cfg.max_wait_before_swap_ms = 0;  // the starvation guard alone would swap at once
  in.children = {ready("kev", 1, 1, t0 - 100ms)};
  in.queue = {{1, "laya", t0}};
  auto d = decide(in);
  CHECK(d.actions.empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 400ms);

  SECTION("work queued (not in flight) for the resident model holds it too") {
    in.children[0].in_flight = 0;
    in.queue.push_back({2, "kev", t0});
    auto d2 = decide(in);
    CHECK(of_kind(d2, K::stop).empty());
    CHECK(of_kind(d2, K::drain).empty());
    REQUIRE(d2.wake_at);
    CHECK(*d2.wake_at == t0 + 400ms);
  }
}

// Regression (issue 15): min_residency_ms held a child that nobody used, so every switch on the
// default configuration waited ~500 ms for nothing.
TEST_CASE("scheduler: no-wait switch when the resident model has no queued or in-flight work") {
  auto in = base();
  in.children = {ready("kev", 0, 1, t0 - 1ms)};  // became ready just now
  in.queue = {{1, "laya", t0}};
  auto d = decide(in);
  CHECK(only(d) == Action{K::stop, "kev", 0});
  CHECK_FALSE(d.wake_at);
}

TEST_CASE("scheduler: grouping keeps serving the resident model until the starvation guard") {
  auto in = base();
  in.children = {ready("kev", 1, 1)};
  in.queue = {{1, "laya", t0 - 1s}, {2, "kev", t0 - 500ms}};
  auto d = decide(in);
  CHECK(of_kind(d, K::stop).empty());
  CHECK(of_kind(d, K::drain).empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 1s);  // laya's head reaches max_wait_before_swap then

  SECTION("a free slot serves the resident model's queued request") {
    in.children[0].in_flight = 0;
    auto rel = of_kind(decide(in), K::release);
    REQUIRE(rel.size() == 1);
    CHECK(rel[0].request == 2);
  }
  SECTION("once the other model waited long enough, the resident one drains") {
    in.now = t0 + 1s;
    auto d2 = decide(in);
    CHECK(of_kind(d2, K::drain).size() == 1);
    CHECK(of_kind(d2, K::release).empty());
    CHECK(of_kind(d2, K::stop).empty());  // a request is still in flight
  }
}

// Regression: a request for the other model used to start the drain at once when nothing else was
// queued for the resident model, so its next requests (arriving a moment later) waited for a swap.
TEST_CASE("scheduler: busy resident model is not drained before the starvation guard") {
  auto in = base();
  in.children = {ready("kev", 1, 1)};
  in.queue = {{1, "laya", t0 - 500ms}};
  auto d = decide(in);
  CHECK(of_kind(d, K::drain).empty());
  CHECK(of_kind(d, K::stop).empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 1500ms);

  SECTION("idle resident model with nothing queued for it is swapped at once") {
    in.children[0].in_flight = 0;
    CHECK(of_kind(decide(in), K::stop).size() == 1);
  }
  SECTION("after the guard the busy resident model drains") {
    in.now = t0 + 1500ms;
    CHECK(of_kind(decide(in), K::drain).size() == 1);
  }
}

TEST_CASE("scheduler: never evicts a child with requests in flight before drain_timeout") {
  auto in = base();
  in.children = {ready("kev", 1, 1)};
  in.children[0].phase = Phase::draining;
  in.children[0].draining_since = t0 - 10s;
  in.queue = {{1, "laya", t0 - 20s}, {2, "kev", t0}};
  auto d = decide(in);
  CHECK(of_kind(d, K::stop).empty());
  CHECK(of_kind(d, K::release).empty());  // draining: no new work
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 50s);

  SECTION("in-flight done: stop") {
    in.children[0].in_flight = 0;
    CHECK(of_kind(decide(in), K::stop).size() == 1);
  }
  SECTION("drain timeout: stop anyway") {
    in.now = t0 + 50s;
    CHECK(of_kind(decide(in), K::stop).size() == 1);
  }
}

TEST_CASE("scheduler: restart backoff delays the start") {
  auto in = base();
  in.queue = {{1, "kev", t0}};
  in.not_before["kev"] = t0 + 750ms;
  auto d = decide(in);
  CHECK(d.actions.empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 750ms);
  in.now = t0 + 750ms;
  CHECK(of_kind(decide(in), K::start).size() == 1);
}

TEST_CASE("scheduler: allowed sets let models co-reside") {
  auto in = base();
  in.allowed_sets = {{"kev", "laya"}, {"big"}};
  in.children = {ready("kev")};
  in.queue = {{1, "laya", t0}};
  auto d = decide(in);
  CHECK(only(d) == Action{K::start, "laya", 0});

  SECTION("a model outside the set evicts both") {
    in.children = {ready("kev"), ready("laya")};
    in.queue = {{1, "big", t0}};
    CHECK(of_kind(decide(in), K::stop).size() == 2);
  }
}

TEST_CASE("scheduler: oldest waiting model is the next target") {
  auto in = base();
  in.children = {ready("a")};
  in.queue = {{1, "c", t0 - 3s}, {2, "b", t0 - 1s}};
  auto d = decide(in);
  REQUIRE(of_kind(d, K::stop).size() == 1);
  in.children.clear();
  auto d2 = decide(in);
  CHECK(only(d2) == Action{K::start, "c", 0});
}

TEST_CASE("scheduler: may_coreside") {
  CHECK(may_coreside({"a"}, {}));
  CHECK(may_coreside({"a", "a"}, {}));
  CHECK_FALSE(may_coreside({"a", "b"}, {}));
  CHECK(may_coreside({"a", "b"}, {{"a", "b", "c"}}));
  CHECK_FALSE(may_coreside({"a", "d"}, {{"a", "b", "c"}}));
}

// Host RAM planned in pairs (docs/ledger.md "No GPU"): kev and laya alive, x asked for. Both
// {kev, x} and {laya, x} keep one child; the idle one goes, not the one still answering.
TEST_CASE("scheduler: between sets that keep as many children, the idle child is the victim") {
  auto in = base();
  in.allowed_sets = {{"kev", "laya"}, {"kev", "x"}, {"laya", "x"}};
  in.children = {ready("kev", 1), ready("laya")};
  in.queue = {{1, "x", t0}};
  auto d = decide(in);
  CHECK(of_kind(d, K::stop) == std::vector<Action>{{K::stop, "laya", 0}});
  CHECK(of_kind(d, K::drain).empty());
  in.children = {ready("kev"), ready("laya", 1)};
  d = decide(in);
  CHECK(of_kind(d, K::stop) == std::vector<Action>{{K::stop, "kev", 0}});
  in.children = {ready("kev"), ready("laya")};  // both idle, one queued for laya: kev goes
  in.queue = {{1, "x", t0}, {2, "laya", t0 + 1ms}};
  d = decide(in);
  CHECK(of_kind(d, K::stop) == std::vector<Action>{{K::stop, "kev", 0}});
}

namespace {
// Per-device rotation as allowed sets: gpu 0 takes turns between a0 and b0, gpu 1 between a1 and b1.
const std::vector<std::vector<std::string>> kTwoDevices = {{"a0", "a1"}, {"a0", "b1"}, {"b0", "a1"}, {"b0", "b1"}};
}  // namespace

TEST_CASE("scheduler: a switch on another device does not wait behind an older target") {
  auto in = base();
  in.allowed_sets = kTwoDevices;
  in.children = {ready("a0", 1), ready("a1")};  // a0 busy: b0 must wait for its guard
  in.queue = {{1, "b0", t0}, {2, "b1", t0 + 1ms}};
  auto d = decide(in);
  // b0 (older) waits for a0's starvation guard; b1 replaces idle a1 on the other device at once.
  CHECK(of_kind(d, K::stop) == std::vector<Action>{{K::stop, "a1", 0}});
  CHECK(of_kind(d, K::drain).empty());
  REQUIRE(d.wake_at);
  in.children = {ready("a0", 1)};  // a1 stopped
  d = decide(in);
  CHECK(of_kind(d, K::start) == std::vector<Action>{{K::start, "b1", 0}});
}

TEST_CASE("scheduler: targets on the same device stay FIFO, one at a time") {
  auto in = base();
  in.allowed_sets = kTwoDevices;
  in.queue = {{1, "a0", t0}, {2, "b0", t0}};
  auto d = decide(in);
  CHECK(of_kind(d, K::start) == std::vector<Action>{{K::start, "a0", 0}});  // b0 conflicts with a0: not started
}

TEST_CASE("scheduler: with nothing alive, one target per device starts at once") {
  auto in = base();
  in.allowed_sets = kTwoDevices;
  in.queue = {{1, "a0", t0}, {2, "b0", t0}, {3, "b1", t0}};
  auto d = decide(in);
  CHECK(of_kind(d, K::start) == std::vector<Action>{{K::start, "a0", 0}, {K::start, "b1", 0}});
}

TEST_CASE("scheduler: a backoff on one device does not hold the other") {
  auto in = base();
  in.allowed_sets = kTwoDevices;
  in.queue = {{1, "a0", t0}, {2, "a1", t0}};
  in.not_before["a0"] = t0 + 5s;
  auto d = decide(in);
  CHECK(of_kind(d, K::start) == std::vector<Action>{{K::start, "a1", 0}});
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 5s);
}

TEST_CASE("scheduler: each device's starvation guard counts from its own target's oldest request") {
  auto in = base();
  in.allowed_sets = kTwoDevices;
  in.children = {ready("a0", 1), ready("a1", 1)};
  in.queue = {{1, "b0", t0 - 3s}, {2, "b1", t0 - 1s}, {3, "a0", t0}, {4, "a1", t0}};
  auto d = decide(in);
  // b0 has waited past max_wait_before_swap_ms (2 s): a0 drains; b1 has not: a1 keeps serving.
  CHECK(of_kind(d, K::drain) == std::vector<Action>{{K::drain, "a0", 0}});
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 1s);
}

TEST_CASE("scheduler: an idle child is unloaded at its idle deadline, not before") {
  auto in = base();
  auto kev = ready("kev");
  kev.idle_deadline = t0 + 5s;
  in.children = {kev};
  auto d = decide(in);
  CHECK(d.actions.empty());
  REQUIRE(d.wake_at);
  CHECK(*d.wake_at == t0 + 5s);
  in.now = t0 + 5s;
  d = decide(in);
  CHECK(only(d) == Action{K::unload, "kev", 0});
}

TEST_CASE("scheduler: idle unload skips a child with work queued or in flight") {
  auto in = base();
  auto kev = ready("kev", 1);
  kev.idle_deadline = t0 - 1s;  // (the supervisor sets none while busy; the scheduler checks too)
  in.children = {kev};
  CHECK(of_kind(decide(in), K::unload).empty());
  in.children[0].in_flight = 0;
  in.queue = {{1, "kev", t0}};
  const auto d = decide(in);
  CHECK(of_kind(d, K::unload).empty());
  CHECK(of_kind(d, K::release).size() == 1);  // the queued request is served instead
}

TEST_CASE("scheduler: a child without an idle deadline is never unloaded") {
  auto in = base();
  in.children = {ready("kev")};
  in.now = t0 + 100000s;
  const auto d = decide(in);
  CHECK(d.actions.empty());
  CHECK_FALSE(d.wake_at);
}

TEST_CASE("scheduler: wanted profiles start when they fit and never evict") {
  auto in = base();
  in.wanted = {"pin"};
  SECTION("nothing alive: the wanted profile starts") {
    const auto d = decide(in);
    CHECK(only(d) == Action{K::start, "pin", 0});
  }
  SECTION("one at a time and another child alive: it waits, evicting nobody") {
    in.children = {ready("kev")};
    CHECK(decide(in).actions.empty());
  }
  SECTION("a pin (member of every allowed set) starts beside the rotating child") {
    in.allowed_sets = {{"pin", "kev"}, {"pin", "laya"}};
    in.children = {ready("kev")};
    const auto d = decide(in);
    CHECK(only(d) == Action{K::start, "pin", 0});
  }
  SECTION("restart backoff delays it") {
    in.not_before["pin"] = t0 + 3s;
    const auto d = decide(in);
    CHECK(d.actions.empty());
    REQUIRE(d.wake_at);
    CHECK(*d.wake_at == t0 + 3s);
  }
  SECTION("a queued request's target goes first") {
    in.queue = {{1, "kev", t0}};
    const auto d = decide(in);
    CHECK(only(d) == Action{K::start, "kev", 0});
  }
}

TEST_CASE("scheduler: a pin is never chosen as a victim of a switch") {
  auto in = base();
  in.allowed_sets = {{"pin", "kev"}, {"pin", "laya"}};
  in.children = {ready("pin"), ready("kev")};
  in.queue = {{1, "laya", t0}};
  const auto d = decide(in);
  const auto stops = of_kind(d, K::stop);
  REQUIRE(stops.size() == 1);
  CHECK(stops[0].child == "kev");
}
