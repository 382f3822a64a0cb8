// Switch ahead (scheduling.switch_ahead): the prediction and the scheduler's guess, plain values.
#include <catch2/catch.hpp>

#include <boost/asio/detached.hpp>

#include "support/fake_effects.hpp"
#include "support/sched_values.hpp"
#include "support/supervisor_fixture.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using K = Action::Kind;
using test::child;
using test::only;
using test::t0;

namespace {

// Kev resident, idle; the calls alternated, so Laya is predicted.
SchedInput alternating() {
  SchedInput in = test::base();
  in.children = {child("kev", Phase::ready)};
  in.ahead = "laya";
  return in;
}

using Fixture = test::SupervisorFixture;

// Kev and laya; switch_ahead and the starvation guard as given.
config::Config ahead_config(bool switch_ahead, int max_wait_before_swap_ms = 0) {
  auto cfg = test::fast_config({test::fast_profile("kev", "x", "/m/kev.gguf"),
                                test::fast_profile("laya", "x", "/m/laya.gguf")},
                               std::filesystem::path());
  cfg.orch.scheduling.switch_ahead = switch_ahead;
  cfg.orch.scheduling.max_wait_before_swap_ms = max_wait_before_swap_ms;
  return cfg;
}

}  // namespace

TEST_CASE("switch ahead: only four strictly alternating calls predict the other model") {
  using V = std::vector<std::string>;
  CHECK_FALSE(predict_alternation(V{}));
  CHECK_FALSE(predict_alternation(V{"laya", "kev", "laya"}));
  CHECK(predict_alternation(V{"laya", "kev", "laya", "kev"}) == "laya");
  CHECK(predict_alternation(V{"kev", "kev", "laya", "kev", "laya"}) == "kev");
  CHECK_FALSE(predict_alternation(V{"kev", "kev", "laya", "kev"}));      // a run of two kev calls
  CHECK_FALSE(predict_alternation(V{"laya", "kev", "laya", "kev", "kev"}));  // the pattern broke
  CHECK_FALSE(predict_alternation(V{"judge", "kev", "laya", "kev"}));    // three models
  CHECK_FALSE(predict_alternation(V{"kev", "kev", "kev", "kev"}));
}

TEST_CASE("switch ahead: an idle resident in the way is stopped, and the next starts once it is gone") {
  auto in = alternating();
  auto d = decide(in);
  CHECK(only(d) == Action{K::stop, "kev", 0, true});
  in.children = {child("kev", Phase::stopping)};
  CHECK(decide(in).actions.empty());  // both never alive together
  in.children.clear();
  d = decide(in);
  CHECK(only(d) == Action{K::start, "laya", 0, true});
  CHECK_FALSE(d.wake_at);
}

TEST_CASE("switch ahead: no guess while the resident has work, or a request is queued") {
  auto in = alternating();
  in.children = {child("kev", Phase::ready, 1)};
  CHECK(decide(in).actions.empty());
  in.children = {child("kev", Phase::starting)};
  CHECK(decide(in).actions.empty());
  in.children = {child("kev", Phase::draining)};
  for (const auto& a : decide(in).actions) CHECK(a.child == "kev");  // its own drain, nothing for laya
  // A queued request decides instead: kev's call is served by kev, nothing is stopped.
  in.children = {child("kev", Phase::ready)};
  in.queue = {{1, "kev", t0}};
  const auto d = decide(in);
  CHECK(only(d) == Action{K::release, "kev", 1});
}

TEST_CASE("switch ahead: a wanted resident is never stopped for a guess") {
  auto in = alternating();
  in.wanted = {"kev"};
  CHECK(decide(in).actions.empty());
}

TEST_CASE("switch ahead: a model in its restart backoff is not guessed") {
  auto in = alternating();
  in.not_before["laya"] = t0 + 1s;
  CHECK(decide(in).actions.empty());
}

TEST_CASE("switch ahead: a model that may co-reside starts beside the resident") {
  auto in = alternating();
  in.allowed_sets = {{"kev", "laya"}};
  const auto d = decide(in);
  CHECK(only(d) == Action{K::start, "laya", 0, true});
}

TEST_CASE("switch ahead: an alive prediction, or none, changes nothing") {
  auto in = alternating();
  in.ahead.reset();
  CHECK(decide(in).actions.empty());
  in.ahead = "kev";
  CHECK(decide(in).actions.empty());
}

TEST_CASE("switch ahead: alternating calls find the next model started before they ask") {
  Fixture f(ahead_config(true));
  std::vector<SwitchRecord> recs;
  std::vector<std::int64_t> waited;
  test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "laya", "kev", "laya"}) co_await f.call(m);
    CHECK(co_await f.ready("kev"));  // idle after laya: kev is guessed and started
    CHECK(f.world.alive == std::set<std::string>{"kev"});
    waited.push_back(co_await f.call("kev"));
    CHECK(co_await f.ready("laya"));  // and laya after kev
    CHECK(f.world.alive == std::set<std::string>{"laya"});
    waited.push_back(co_await f.call("laya"));
    waited.push_back(co_await f.call("laya"));  // the pattern broke: no guess any more
    co_await test::sleep_for(50ms);
    CHECK(f.world.alive == std::set<std::string>{"laya"});
    recs = (co_await f.sup.snapshot()).recent_switches;
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start laya", "stop laya", "start kev",
                                                   "stop kev", "start laya", "stop laya", "start kev", "stop kev",
                                                   "start laya", "stop laya"});
  CHECK(f.world.max_alive == 1);
  CHECK(waited == std::vector<std::int64_t>{0, 0, 0});  // no call waited for a switch
  REQUIRE(recs.size() == 6);
  CHECK_FALSE(recs[3].ahead);  // laya, asked for
  CHECK(recs[4].ahead);        // kev, guessed before the fifth call
  CHECK(recs[4].from == "laya");
  CHECK(recs[4].to == "kev");
  CHECK(recs[5].ahead);
}

TEST_CASE("switch ahead: a wrong guess costs one switch back, and switch_ahead false never guesses") {
  for (const bool on : {true, false}) {
    Fixture f(ahead_config(on));
    test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
      for (const char* m : {"kev", "laya", "kev", "laya"}) co_await f.call(m);
      if (on) CHECK(co_await f.ready("kev"));
      else co_await test::sleep_for(50ms);  // (nothing to wait for: no guess)
      co_await f.call("laya");  // kev was guessed; laya comes back
      co_await test::sleep_for(50ms);
      co_await f.sup.shutdown();
    });
    const auto starts = std::count_if(f.world.events.begin(), f.world.events.end(),
                                      [](const std::string& e) { return e.rfind("start", 0) == 0; });
    CHECK(starts == (on ? 6 : 4));
    CHECK(f.world.max_alive == 1);
  }
}

TEST_CASE("switch ahead: no guess once the resident is unloaded (keep_alive 0)") {
  Fixture f(ahead_config(true));
  test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "laya", "kev"}) co_await f.call(m);
    auto l = co_await f.sup.acquire("laya", test::in(2s));
    REQUIRE(l.ok());
    l->set_keep_alive(0);  // unload right after: the caller wants the memory back
    l->release();
    co_await test::sleep_for(50ms);
    CHECK(f.world.alive.empty());
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events.back() == "stop laya");
}

TEST_CASE("switch ahead: a guess whose start fails is not tried again while nobody calls") {
  Fixture f(ahead_config(true));
  std::vector<SwitchRecord> recs;
  test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "laya", "kev"}) co_await f.call(m);
    f.world.start_failures["kev"] = std::vector<ChildFailure>(5, classify_exit(1, 0, {"error loading model"}));
    co_await f.call("laya");
    const auto end = std::chrono::steady_clock::now() + 10s;  // the guessed start fails (bounded wait)
    while (std::chrono::steady_clock::now() < end && ((recs = (co_await f.sup.snapshot()).recent_switches).empty() ||
                                                       recs.back().ok))
      co_await test::sleep_for(1ms);
    co_await test::sleep_for(300ms);  // many times the restart backoff (20 ms): no second try
    recs = (co_await f.sup.snapshot()).recent_switches;
    co_await f.sup.shutdown();
  });
  const auto kev_starts = std::count(f.world.events.begin(), f.world.events.end(), std::string("start kev"));
  CHECK(kev_starts == 3);  // two asked for, one guess
  REQUIRE_FALSE(recs.empty());
  CHECK(recs.back().ahead);
  CHECK_FALSE(recs.back().ok);
  CHECK(f.world.alive.empty());
}

// Regression (issue 32): an operator's /admin/load counted as one more alternating call, so the
// guess stopped the model just loaded within a second.
TEST_CASE("switch ahead: an explicit load is not undone by a guess") {
  Fixture f(ahead_config(true));
  test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"laya", "kev", "laya"}) co_await f.call(m);
    CHECK((co_await f.sup.ensure_ready("kev", test::in(2s))).ok());
    co_await test::sleep_for(50ms);  // many starts of the fake (5 ms): a guess would have run
    CHECK(f.world.alive == std::set<std::string>{"kev"});
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events.back() == "stop kev");  // by the shutdown
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), std::string("start laya")) == 2);
}

// Calls of a burst come while others wait: the next call is already queued, so there is nothing to
// guess, and a guess after the burst stopped a model that the burst's next wave needed.
TEST_CASE("switch ahead: calls that arrive while others are queued (a burst) make no guess") {
  Fixture f(ahead_config(true, 10000));  // the guard never cuts this burst: one load per model
  std::vector<SwitchRecord> recs;
  test::run_co(f.ioc, [&]() -> asio::awaitable<void> {
    int done = 0;
    for (const char* m : {"laya", "kev", "laya", "kev"})
      asio::co_spawn(f.ioc, [&f, &done, m]() -> asio::awaitable<void> {
        co_await f.call(m);
        ++done;
      }, asio::detached);
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (done < 4 && std::chrono::steady_clock::now() < end) co_await test::sleep_for(1ms);
    REQUIRE(done == 4);
    co_await test::sleep_for(50ms);  // a guess (5 ms starts) would have run by now
    recs = (co_await f.sup.snapshot()).recent_switches;
    co_await f.sup.shutdown();
  });
  for (const auto& r : recs) CHECK_FALSE(r.ahead);
  CHECK(recs.size() == 2);  // laya, then kev: one load each
}
