// The supervisor's event stream, the start watchdog, a caller that leaves while queued, and a
// dead child noticed at once: against fake Effects (no processes).
#include <catch2/catch.hpp>

#include <boost/asio/detached.hpp>

#include "support/fake_effects.hpp"
#include "support/supervisor_fixture.hpp"
#include "supervisor/supervisor.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::FakeEffects;
using kevlaya::test::FakeWorld;
using kevlaya::test::in;
using kevlaya::test::run_co;
using kevlaya::test::sleep_for;

namespace {

using Fixture = test::SupervisorFixture;

// "kev: stopped->starting", "switch -> kev ok", ...
std::string describe(const Event& e) {
  if (e.type == Event::Type::switch_done)
    return "switch " + (e.record.from.empty() ? std::string("-") : e.record.from) + "->" + e.record.to +
           (e.record.ok ? " ok" : " failed");
  return e.child + ": " + std::string(to_string(e.from)) + "->" + std::string(to_string(e.to));
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("supervisor events: several subscribers get every phase change and switch record, in order") {
  Fixture f;
  std::vector<std::string> a, b, c;
  auto sa = f.sup.subscribe([&](const Event& e) { a.push_back(describe(e)); });
  auto sb = f.sup.subscribe([&](const Event& e) { b.push_back(describe(e)); });
  auto sc = std::make_unique<Subscription>(f.sup.subscribe([&](const Event& e) { c.push_back(describe(e)); }));
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    k->release();
    sc.reset();  // unsubscribes: c sees nothing after this
    auto l = co_await f.sup.acquire("laya", in(2s));
    REQUIRE(l.ok());
    l->release();
    co_await f.sup.shutdown();
  });
  // The test resumes on the supervisor's strand after its first acquire, so the second is admitted
  // synchronously, before kev's posted release lands: kev drains that one lease, then stops.
  const std::vector<std::string> expected = {
      "kev: stopped->starting", "switch -->kev ok",          "kev: starting->ready",
      "kev: ready->draining",   "kev: draining->stopping",   "kev: stopping->stopped",
      "laya: stopped->starting",
      "switch kev->laya ok",    "laya: starting->ready",   "laya: ready->stopping",
      "laya: stopping->stopped"};
  CHECK(a == expected);
  CHECK(b == expected);
  CHECK(c == std::vector<std::string>(expected.begin(), expected.begin() + 3));
}

TEST_CASE("supervisor events: a failed start's switch record carries the failure kind and log tail") {
  Fixture f;
  f.world.start_failures["kev"] = {classify_exit(1, 0, {"llama_model_load: error loading model"})};
  std::vector<Event> seen;
  auto s = f.sup.subscribe([&](const Event& e) { seen.push_back(e); });
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    CHECK_FALSE(k.ok());
    co_await f.sup.shutdown();
  });
  const Event* sw = nullptr;
  const Event* failed = nullptr;
  for (const auto& e : seen) {
    if (e.type == Event::Type::switch_done) sw = &e;
    if (e.type == Event::Type::phase && e.to == Phase::failed) failed = &e;
  }
  REQUIRE(sw);
  CHECK_FALSE(sw->record.ok);
  CHECK(sw->record.failure == FailureKind::bad_model);
  CHECK(sw->record.log_tail == std::vector<std::string>{"llama_model_load: error loading model"});
  REQUIRE(failed);
  REQUIRE(failed->failure);
  CHECK(failed->failure->kind == FailureKind::bad_model);
}

// Regression (issue 14 item 2): a start that never returned left the model "starting" forever,
// and its requests and SIGTERM waited with it.
TEST_CASE("supervisor: start watchdog ends a start that never returns (nothing waits forever)") {
  auto cfg = test::kev_and_laya();
  cfg.profiles[0].health.startup_timeout_s = 1;
  cfg.profiles[0].stop.grace_s = 0.1;
  Fixture f(cfg);
  f.world.start_hangs = true;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(30s));
    REQUIRE_FALSE(k.ok());
    CHECK(k.error().code == Errc::timeout);
    CHECK(k.error().message.find("startup_timeout_s") != std::string::npos);
    co_await sleep_for(50ms);  // the hung start's child is stopped
    auto snap = co_await f.sup.snapshot();
    CHECK(snap.profiles.front().state != Phase::starting);  // failed (stopped once the backoff ends)
    REQUIRE(snap.profiles.front().last_failure);
    CHECK(snap.profiles.front().last_failure->kind == FailureKind::startup_timeout);
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev"});
}

TEST_CASE("supervisor: a start that throws fails with a clear cause, not a model stuck starting") {
  Fixture f;
  f.world.start_throws = true;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(5s));
    REQUIRE_FALSE(k.ok());
    CHECK(k.error().code == Errc::internal);
    CHECK(k.error().message.find("invalid UTF-8") != std::string::npos);
    co_await f.sup.shutdown();
  });
}

TEST_CASE("supervisor: shutdown during a hung start returns at once") {
  Fixture f;
  f.world.start_hangs = true;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    std::optional<Result<Lease>> got;
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> { got.emplace(co_await f.sup.acquire("kev", in(60s))); },
                   asio::detached);
    co_await sleep_for(20ms);
    co_await f.sup.shutdown();  // does not wait for the start
    co_await sleep_for(5ms);
    REQUIRE(got);
    CHECK(got->error().code == Errc::unavailable);
  });
}

// Regression (issue 14): a client that disconnected while queued still caused its model's load.
TEST_CASE("supervisor: a caller that leaves while queued causes no load") {
  auto cfg = test::kev_and_laya();
  cfg.orch.scheduling.max_wait_before_swap_ms = 10000;  // kev keeps serving while laya waits
  Fixture f(cfg);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    auto gone = std::make_shared<upstream::CancelToken>();
    std::optional<Result<Lease>> got;
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> {
      got.emplace(co_await f.sup.acquire("laya", std::nullopt, gone));
    }, asio::detached);
    co_await sleep_for(20ms);
    CHECK((co_await f.sup.snapshot()).queued == 1);
    gone->cancel();
    co_await sleep_for(20ms);
    REQUIRE(got);
    CHECK(got->error().code == Errc::unavailable);
    CHECK((co_await f.sup.snapshot()).queued == 0);
    k->release();
    co_await sleep_for(50ms);
    co_await f.sup.shutdown();
  });
  CHECK_FALSE(has(f.world.events, "start laya"));
}

// Regression (issue 14 item 5): a child that crashed stayed "ready" until its exit was reported,
// and the requests sent to it meanwhile got "connection refused".
TEST_CASE("supervisor: check_alive marks a dead child crashed at once, queued requests wait for the restart") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    CHECK_FALSE(co_await f.sup.check_alive(*k));  // refused, but the process lives: no crash
    CHECK_FALSE(k->crashed());
    f.world.exited.insert("kev");
    CHECK(co_await f.sup.check_alive(*k));
    REQUIRE(k->crashed());
    CHECK(k->crash_error().code == Errc::child_crashed);
    auto snap = co_await f.sup.snapshot();
    CHECK(snap.profiles.front().state != Phase::ready);
    CHECK(snap.profiles.front().crashes == 1);
    f.world.exits["kev"](classify_exit(-1, 9, {"boom"}));  // the exit report comes later
    k->release();
    f.world.exited.clear();
    auto again = co_await f.sup.acquire("kev", in(2s));  // waits for the restart
    CHECK(again.ok());
    snap = co_await f.sup.snapshot();
    CHECK(snap.profiles.front().crashes == 1);  // counted once
    REQUIRE(snap.profiles.front().last_failure);
    CHECK(snap.profiles.front().last_failure->signal == 9);  // the late report's details
    co_await f.sup.shutdown();
  });
}

// Issue 15: admission lived in the door and the supervisor with different rules; now only here.
TEST_CASE("supervisor: admission: queue.max_depth waiters, then queue_full, the wait defaults to queue.max_wait_s") {
  auto cfg = test::kev_and_laya();
  cfg.orch.queue.max_depth = 1;
  cfg.orch.queue.max_wait_s = 1;
  Fixture f(cfg);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev");
    REQUIRE(k.ok());
    std::optional<Result<Lease>> queued;
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> { queued.emplace(co_await f.sup.acquire("kev")); },
                   asio::detached);
    co_await sleep_for(20ms);
    auto refused = co_await f.sup.acquire("kev");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == Errc::queue_full);
    co_await sleep_for(1500ms);  // past queue.max_wait_s: the queued one timed out
    REQUIRE(queued);
    REQUIRE_FALSE(queued->ok());
    CHECK(queued->error().code == Errc::timeout);
    co_await f.sup.shutdown();
  });
}
