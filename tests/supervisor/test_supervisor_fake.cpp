// Supervisor against fake Effects: no processes; the fake records starts/stops and checks that
// two models that may not co-reside are never "alive" together.
#include <algorithm>
#include <catch2/catch.hpp>

#include <boost/asio/detached.hpp>

#include <boost/asio/post.hpp>
#include <map>
#include <optional>
#include <set>
#include <typeinfo>

#include "support/fake_effects.hpp"
#include "support/supervisor_fixture.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::in;
using kevlaya::test::run_co;
using kevlaya::test::sleep_for;
using kevlaya::test::FakeEffects;
using kevlaya::test::FakeWorld;

namespace {

using Fixture = test::SupervisorFixture;
using test::kev_and_laya;

// A strand of the supervisor's own (false), or the runtime's single-threaded executor (true).
SupervisorOptions executor_options(bool serial) {
  SupervisorOptions o;
  o.serial_executor = serial;
  return o;
}

}  // namespace

TEST_CASE("supervisor: acquire starts the model, switching stops the other first") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("decider", in(2s));  // alias resolves to kev
    REQUIRE(a.ok());
    CHECK(a->profile() == "kev");
    CHECK(a->endpoint().port == 40000);
    CHECK(a->switch_ms() >= 0);
    a->release();
    auto b = co_await f.sup.acquire("laya", in(2s));
    REQUIRE(b.ok());
    CHECK(b->profile() == "laya");
    b->release();
    auto snap = co_await f.sup.snapshot();
    CHECK(snap.recent_switches.size() == 2);
    CHECK(snap.recent_switches.back().from == "kev");
    CHECK(snap.recent_switches.back().to == "laya");
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start laya", "stop laya"});
  CHECK(f.world.max_alive == 1);
}

// Guards the burst tests' false "laya -> laya": the stop of an admin unload opened a switch record
// that the next cold start of the same model then closed as a switch from itself.
TEST_CASE("supervisor: an admin unload is not a switch, the next cold start is recorded from nothing") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    a->release();
    REQUIRE((co_await f.sup.unload(std::nullopt)).ok());
    auto b = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(b.ok());
    b->release();
    const auto snap = co_await f.sup.snapshot();
    REQUIRE(snap.recent_switches.size() == 2);
    for (const auto& s : snap.recent_switches) {
      CHECK(s.from.empty());
      CHECK(s.to == "kev");
      CHECK(s.stop_ms == 0);
    }
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start kev", "stop kev"});
}

TEST_CASE("supervisor: never evicts a child with a lease in flight") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    bool laya_done = false;
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> {
      auto b = co_await f.sup.acquire("laya", in(2s));
      CHECK(b.ok());
      laya_done = true;
    }, asio::detached);
    co_await sleep_for(50ms);
    CHECK_FALSE(laya_done);
    CHECK(f.world.events == std::vector<std::string>{"start kev"});
    a->release();
    co_await sleep_for(100ms);
    CHECK(laya_done);
    co_await f.sup.shutdown();
  });
  CHECK(f.world.max_alive == 1);
}

TEST_CASE("supervisor: parallel=1 serves one lease at a time, FIFO") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    auto b = co_await f.sup.acquire("kev", in(60ms));
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == Errc::timeout);
    a->release();
    auto c = co_await f.sup.acquire("kev", in(1s));
    CHECK(c.ok());
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev"});
}

TEST_CASE("supervisor: unknown model is not_found, after shutdown unavailable") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("nope", in(1s));
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().code == Errc::not_found);
    co_await f.sup.shutdown();
    auto b = co_await f.sup.acquire("kev", in(1s));
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == Errc::unavailable);
  });
}

TEST_CASE("supervisor: a start failure reaches the waiting request with its hint") {
  Fixture f;
  ChildFailure oom = classify_exit(1, 0, {"ggml_backend_cuda_buffer_type_alloc_buffer: cudaMalloc failed: out of memory"});
  f.world.start_failures["kev"] = {oom};
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().hint.find("reduce ctx or ngl") != std::string::npos);
    CHECK(a.error().detail.size() == 1);
    auto b = co_await f.sup.acquire("kev", in(2s));  // restarts after the backoff
    CHECK(b.ok());
    co_await f.sup.shutdown();
  });
}

TEST_CASE("supervisor: a crash cuts the lease, the next request restarts the child") {
  Fixture f;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    f.world.exits["kev"](classify_exit(-1, 11, {"boom"}));
    co_await sleep_for(20ms);
    REQUIRE(a->crashed());
    CHECK(a->crash_error().code == Errc::child_crashed);
    CHECK(a->crash_error().message.find("signal 11") != std::string::npos);
    a->release();
    auto b = co_await f.sup.acquire("kev", in(2s));
    CHECK(b.ok());
    auto snap = co_await f.sup.snapshot();
    CHECK(snap.profiles.front().crashes == 1);
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start kev", "stop kev"});
}

TEST_CASE("supervisor: a hung child is killed, marked failed (hung) and replaced, and a queued call waits for the new one") {
  Fixture f;
  std::vector<std::string> failures;  // "from->to:kind" of the phase events that carry a failure
  auto sub = f.sup.subscribe([&](const Event& e) {
    if (e.type == Event::Type::phase && e.failure)
      failures.push_back(std::string(to_string(e.from)) + "->" + std::string(to_string(e.to)) + ":" +
                         std::string(to_string(e.failure->kind)));
  });
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    const auto first_port = a->endpoint().port;
    std::optional<Result<Lease>> queued;  // parallel 1: waits behind `a`
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> { queued.emplace(co_await f.sup.acquire("kev", in(5s))); },
                   asio::detached);
    co_await sleep_for(10ms);
    CHECK_FALSE(co_await f.sup.check_responsive(*a));  // answers its probe: left alone
    CHECK_FALSE(a->crashed());
    f.world.silent.insert("kev");
    CHECK(co_await f.sup.check_responsive(*a));
    REQUIRE(a->crashed());
    CHECK(a->crash_error().code == Errc::child_crashed);
    CHECK(a->crash_error().message.find("stopped answering") != std::string::npos);
    a->release();
    for (int i = 0; i < 200 && !queued; ++i) co_await sleep_for(5ms);
    REQUIRE(queued);
    REQUIRE(queued->ok());
    CHECK(queued->value().endpoint().port != first_port);  // the replacement, not the hung one
    auto snap = co_await f.sup.snapshot();
    REQUIRE(snap.profiles.front().last_failure);
    CHECK(snap.profiles.front().last_failure->kind == FailureKind::hung);
    CHECK(snap.profiles.front().crashes == 1);
    queued.reset();
    co_await f.sup.shutdown();
  });
  // The liveness checks probe (how often depends on who asks); what matters is kill, stop, restart.
  std::vector<std::string> acts;
  for (const auto& e : f.world.events)
    if (e != "probe kev") acts.push_back(e);
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "probe kev") >= 2);
  CHECK(acts == std::vector<std::string>{"start kev", "kill kev", "stop kev", "start kev", "stop kev"});
  CHECK(failures == std::vector<std::string>{"ready->stopping:hung", "stopping->failed:hung"});
}

TEST_CASE("supervisor: a crash loop marks the profile failed with retry_after") {
  auto cfg = kev_and_laya();
  cfg.profiles[0].restart.max_restarts = 2;
  Fixture f(cfg);
  f.world.start_failures["kev"] = std::vector<ChildFailure>(5, classify_exit(1, 0, {"error loading model"}));
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 3; ++i) {
      auto a = co_await f.sup.acquire("kev", in(2s));
      REQUIRE_FALSE(a.ok());
      CHECK(a.error().code == (i < 2 ? Errc::bad_model : Errc::profile_failed));
    }
    auto b = co_await f.sup.acquire("kev", in(2s));
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == Errc::profile_failed);
    CHECK(b.error().retry_after_s > 0);
    auto c = co_await f.sup.acquire("laya", in(2s));  // other profiles are unaffected
    CHECK(c.ok());
    auto snap = co_await f.sup.snapshot();
    CHECK(snap.profiles.front().state == Phase::failed);
    co_await f.sup.shutdown();
  });
}

TEST_CASE("supervisor: grouping serves queued requests of the resident model before swapping") {
  auto cfg = kev_and_laya();
  cfg.orch.scheduling.max_wait_before_swap_ms = 10000;
  Fixture f(cfg);
  std::vector<std::string> order;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto first = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(first.ok());
    auto want = [&](std::string m) -> asio::awaitable<void> {
      auto l = co_await f.sup.acquire(m, in(5s));
      REQUIRE(l.ok());
      order.push_back(m);
      co_await sleep_for(5ms);
    };
    asio::co_spawn(f.ioc, want("laya"), asio::detached);
    co_await sleep_for(5ms);
    asio::co_spawn(f.ioc, want("kev"), asio::detached);
    co_await sleep_for(5ms);
    first->release();
    co_await sleep_for(200ms);
    co_await f.sup.shutdown();
  });
  CHECK(order == std::vector<std::string>{"kev", "laya"});
  CHECK(f.world.max_alive == 1);
}

// The door runs on the supervisor's strand and is admitted without a hop (Supervisor::acquire's
// synchronous path): the same admission as any caller, at once only when a slot is free now. With
// serial_executor (the runtime's single-threaded io_context) the strand is the executor itself.
TEST_CASE("supervisor: a caller on the supervisor's strand is admitted like any other, at once only with a free slot") {
  const bool serial = GENERATE(false, true);
  CAPTURE(serial);
  Fixture f(kev_and_laya(), executor_options(serial));
  const auto& type = f.sup.strand().target_type();  // Boost 1.74's target<T>() does not check T
  REQUIRE(type == (serial ? typeid(asio::io_context::executor_type) : typeid(asio::strand<asio::any_io_executor>)));
  const auto* own = serial ? nullptr : f.sup.strand().target<asio::strand<asio::any_io_executor>>();
  const auto* ioc = serial ? f.sup.strand().target<asio::io_context::executor_type>() : nullptr;
  test::run_co_on(f.ioc, f.sup.strand(), [&]() -> asio::awaitable<void> {
    REQUIRE((serial ? ioc->running_in_this_thread() : own->running_in_this_thread()));
    auto a = co_await f.sup.acquire("decider", in(2s));  // not started: queued until kev is up
    REQUIRE(a.ok());
    CHECK(a->profile() == "kev");
    CHECK(f.world.events == std::vector<std::string>{"start kev"});
    auto busy = co_await f.sup.acquire("kev", in(50ms));  // parallel 1, held: waits, then times out
    REQUIRE_FALSE(busy.ok());
    CHECK(busy.error().code == Errc::timeout);
    a->release();
    co_await sleep_for(10ms);  // the release is posted
    auto b = co_await f.sup.acquire("kev", in(2s));  // ready with a free slot: granted now
    REQUIRE(b.ok());
    CHECK(b->switch_ms() == 0);
    CHECK(f.world.events == std::vector<std::string>{"start kev"});
    auto unknown = co_await f.sup.acquire("nobody", in(2s));
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == Errc::not_found);
    b->release();
    co_await f.sup.shutdown();
  });
}

// Regression: Boost 1.74's any_executor::target<T>() casts without checking T, so the check for a
// caller on the strand read the runtime's io_context executor as a strand and answered false: the
// door hopped through co_spawn (a post and a coroutine) for every request. Granted without a hop,
// nothing posted before the call runs before the lease is back.
TEST_CASE("supervisor: a caller on the serial executor is granted a free slot without a hop") {
  const bool serial = GENERATE(false, true);
  CAPTURE(serial);
  Fixture f(kev_and_laya(), executor_options(serial));
  test::run_co_on(f.ioc, f.sup.strand(), [&]() -> asio::awaitable<void> {
    auto warm = co_await f.sup.acquire("kev", in(2s));  // starts kev
    REQUIRE(warm.ok());
    warm->release();
    co_await sleep_for(10ms);  // the release is posted
    bool other_ran = false;
    asio::post(f.sup.strand(), [&] { other_ran = true; });
    auto lease = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(lease.ok());
    CHECK_FALSE(other_ran);
    co_await sleep_for(1ms);
    CHECK(other_ran);
    lease->release();
    co_await f.sup.shutdown();
  });
}

// admit_now: acquire's admission without its wait, for the door's streamed calls (which send
// keep-alives only while they wait): a free slot now, a ticket for a queued call that wait() turns
// into its lease, an error now; off the strand, nothing (the caller uses acquire()).
TEST_CASE("supervisor: admit_now grants a free slot at once, queues a call that must wait, and wait() ends it") {
  Fixture f(kev_and_laya(), executor_options(true));
  using Ticket = Supervisor::Ticket;
  CHECK_FALSE(f.sup.admit_now("kev", nullptr).has_value());  // not on the strand
  test::run_co_on(f.ioc, f.sup.strand(), [&]() -> asio::awaitable<void> {
    auto first = f.sup.admit_now("kev", nullptr);  // not started: queued, and the start begins
    REQUIRE(first.has_value());
    REQUIRE(std::holds_alternative<Ticket>(*first));
    Ticket queued = std::get<Ticket>(std::move(*first));
    auto lease = co_await f.sup.wait(std::move(queued), nullptr);
    REQUIRE(lease.ok());
    CHECK(lease->profile() == "kev");
    CHECK(f.world.events == std::vector<std::string>{"start kev"});
    lease->release();
    co_await sleep_for(10ms);  // the release is posted
    auto now = f.sup.admit_now("kev", nullptr);  // ready with a free slot: a lease, no wait
    REQUIRE(now.has_value());
    REQUIRE(std::holds_alternative<Result<Lease>>(*now));
    auto& granted = std::get<Result<Lease>>(*now);
    REQUIRE(granted.ok());
    CHECK(granted->switch_ms() == 0);
    granted->release();
    auto unknown = f.sup.admit_now("nobody", nullptr);
    REQUIRE(unknown.has_value());
    REQUIRE(std::holds_alternative<Result<Lease>>(*unknown));
    CHECK(std::get<Result<Lease>>(*unknown).error().code == Errc::not_found);
    CHECK(f.world.events == std::vector<std::string>{"start kev"});
    co_await f.sup.shutdown();
  });
}

// Regression (SIGINT to `up --cycle` mid-switch): a shutdown that ran after a start was decided but
// before it reached the effects stopped nothing, and the start then brought up a child that nobody
// stopped. The shutdown is issued 0..11 scheduler turns after the call that starts kev, so one of
// them lands in each window of the start; both executor kinds (a strand, the runtime's serial one).
TEST_CASE("supervisor: a shutdown racing a start leaves no child alive") {
  for (const bool serial : {false, true}) {
    for (int turns = 0; turns < 12; ++turns) {
      INFO("serial executor: " << serial << ", shutdown after " << turns << " turns");
      Fixture f(kev_and_laya(), executor_options(serial));
      f.world.start_delay = 30ms;
      std::optional<Result<Lease>> got;
      run_co(f.ioc, [&]() -> asio::awaitable<void> {
        asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> { got.emplace(co_await f.sup.acquire("kev", in(2s))); },
                       asio::detached);
        for (int i = 0; i < turns; ++i) co_await asio::post(f.ioc, asio::use_awaitable);
        co_await f.sup.shutdown();
        CHECK(f.world.alive.empty());
        co_await sleep_for(100ms);  // past the start's own delay: nothing comes up late
      });
      CHECK(f.world.alive.empty());
      REQUIRE(got);
      CHECK_FALSE(got->ok());
    }
  }
}
