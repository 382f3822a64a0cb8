// Lifecycle against fake Effects (docs/lifecycle.md): idle unload and keep_alive, pins and
// preloads, admin unload, and reload. Waits are bounded loops on the outcome, never timings.
#include <catch2/catch.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "config/fingerprint.hpp"
#include "ledger/calibration.hpp"
#include "support/fake_effects.hpp"
#include "support/paths.hpp"
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

config::Config lifecycle_config(int idle_unload_s) {
  auto kev = test::fast_profile("kev", "x", "/m/kev.gguf");
  auto laya = test::fast_profile("laya", "x", "/m/laya.gguf");
  auto big = test::fast_profile("big", "x", "/m/big.gguf");
  auto c = test::fast_config({kev, laya, big}, std::filesystem::path());
  c.orch.idle_unload_s = idle_unload_s;
  return c;
}

using Fixture = test::SupervisorFixture;

}  // namespace

TEST_CASE("lifecycle: an idle child is unloaded after idle_unload_s, with an unload event (idle)") {
  Fixture f(lifecycle_config(1));
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    auto busy = co_await f.sup.snapshot();
    REQUIRE(f.status(busy, "kev")->idle_unload_in_s);
    CHECK(*f.status(busy, "kev")->idle_unload_in_s == Approx(1.0));  // busy: the full idle time
    a->release();
    CHECK(co_await f.until_alive("kev", false));
    auto after = co_await f.sup.snapshot();
    CHECK(f.status(after, "kev")->state == Phase::stopped);
    CHECK_FALSE(f.status(after, "kev")->idle_unload_in_s);
    co_await f.sup.shutdown();
  });
  CHECK(f.unload_reasons() == std::vector<std::string>{"kev:idle"});
}

TEST_CASE("lifecycle: idle_unload_s 0 never unloads") {
  Fixture f(lifecycle_config(0));
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    a->release();
    co_await sleep_for(300ms);
    auto s = co_await f.sup.snapshot();
    CHECK(f.status(s, "kev")->state == Phase::ready);
    CHECK_FALSE(f.status(s, "kev")->idle_unload_in_s);
    co_await f.sup.shutdown();
  });
  CHECK(f.unload_reasons().empty());
}

TEST_CASE("lifecycle: keep_alive 0 unloads right after the answer, the next request starts it again") {
  Fixture f(lifecycle_config(600));
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    a->set_keep_alive(0);
    a->release();
    CHECK(co_await f.until_alive("kev", false));
    auto b = co_await f.sup.acquire("kev", in(2s));  // a fresh start
    REQUIRE(b.ok());
    b->release();  // no keep_alive: back to idle_unload_s
    co_await sleep_for(100ms);
    CHECK(f.world.alive.count("kev") == 1);
    co_await f.sup.shutdown();
  });
  CHECK(f.unload_reasons() == std::vector<std::string>{"kev:keep_alive"});
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start kev", "stop kev"});
}

TEST_CASE("lifecycle: keep_alive -1 keeps the child loaded past idle_unload_s (capped by keep_alive_max_s)") {
  auto cfg = lifecycle_config(1);
  SECTION("no cap: kept") {
    cfg.orch.keep_alive_max_s = -1;
    Fixture f(cfg);
    run_co(f.ioc, [&]() -> asio::awaitable<void> {
      auto a = co_await f.sup.acquire("kev", in(2s));
      REQUIRE(a.ok());
      a->set_keep_alive(-1);
      a->release();
      co_await sleep_for(1500ms);
      auto s = co_await f.sup.snapshot();
      CHECK(f.status(s, "kev")->state == Phase::ready);
      CHECK_FALSE(f.status(s, "kev")->idle_unload_in_s);
      co_await f.sup.shutdown();
    });
  }
  SECTION("a cap of 1 s: unloaded") {
    cfg.orch.idle_unload_s = 0;
    cfg.orch.keep_alive_max_s = 1;
    Fixture f(cfg);
    run_co(f.ioc, [&]() -> asio::awaitable<void> {
      auto a = co_await f.sup.acquire("kev", in(2s));
      REQUIRE(a.ok());
      a->set_keep_alive(3600);
      a->release();
      CHECK(co_await f.until_alive("kev", false));
      co_await f.sup.shutdown();
    });
    CHECK(f.unload_reasons() == std::vector<std::string>{"kev:keep_alive"});
  }
}

TEST_CASE("lifecycle: a request that arrives while an idle child stops waits for a fresh start") {
  Fixture f(lifecycle_config(600));
  bool served = false;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    a->set_keep_alive(0);
    auto sub = f.sup.subscribe([&](const Event& e) {
      if (e.type != Event::Type::phase || e.to != Phase::stopping || served) return;
      asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> {  // arrives during the stop
        auto b = co_await f.sup.acquire("kev", in(5s));
        CHECK(b.ok());
        served = b.ok();
      }, asio::detached);
    });
    a->release();
    for (int i = 0; i < 500 && !served; ++i) co_await sleep_for(10ms);
    co_await f.sup.shutdown();
  });
  CHECK(served);
  CHECK(f.world.events == std::vector<std::string>{"start kev", "stop kev", "start kev", "stop kev"});
}

TEST_CASE("lifecycle: a pin starts without a request, stays beside the rotating ones and is never a victim") {
  auto cfg = lifecycle_config(1);
  cfg.profiles[0].pin = true;  // kev
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya"}, {"kev", "big"}};
  Fixture f(cfg, opts);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    f.sup.start_wanted();
    CHECK(co_await f.until_alive("kev", true));
    auto l = co_await f.sup.acquire("laya", in(2s));
    REQUIRE(l.ok());
    l->release();
    auto b = co_await f.sup.acquire("big", in(2s));  // laya goes, kev stays
    REQUIRE(b.ok());
    b->release();
    co_await sleep_for(1500ms);  // past idle_unload_s: big is unloaded, the pin is not
    auto s = co_await f.sup.snapshot();
    CHECK(f.status(s, "kev")->state == Phase::ready);
    CHECK(f.status(s, "kev")->pinned);
    CHECK_FALSE(f.status(s, "kev")->idle_unload_in_s);
    const auto st = co_await f.sup.unload(std::string("kev"));
    CHECK(!st.ok());
    CHECK(st.error().code == Errc::bad_request);
    co_await f.sup.shutdown();
  });
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "stop kev") == 1);  // shutdown only
  CHECK(f.world.events.front() == "start kev");
}

TEST_CASE("lifecycle: preload starts the listed model once, without a request") {
  auto cfg = lifecycle_config(600);
  cfg.orch.preload = {"laya"};
  Fixture f(cfg);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    f.sup.start_wanted();
    CHECK(co_await f.until_alive("laya", true));
    auto k = co_await f.sup.acquire("kev", in(2s));  // a preload is not a pin: it may be swapped out
    REQUIRE(k.ok());
    k->release();
    co_await sleep_for(100ms);
    CHECK(f.world.alive.count("laya") == 0);
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start laya", "stop laya", "start kev", "stop kev"});
}

TEST_CASE("lifecycle: admin unload of one model stops only it, with reason admin") {
  auto cfg = lifecycle_config(600);
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya"}};
  Fixture f(cfg, opts);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    (co_await f.sup.acquire("kev", in(2s)))->release();
    (co_await f.sup.acquire("laya", in(2s)))->release();
    const auto st = co_await f.sup.unload(std::string("laya"));
    CHECK(st.ok());
    CHECK(f.world.alive == std::set<std::string>{"kev"});
    co_await f.sup.shutdown();
  });
  CHECK(f.unload_reasons() == std::vector<std::string>{"laya:admin"});
}

TEST_CASE("lifecycle: reload keeps unchanged children, replaces a changed one after its lease, removes one") {
  auto cfg = lifecycle_config(600);
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya", "big"}};
  Fixture f(cfg, opts);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    (co_await f.sup.acquire("laya", in(2s)))->release();
    (co_await f.sup.acquire("big", in(2s)))->release();
    auto next = cfg;
    next.profiles[0].ctx = 4096;                       // kev changed
    next.profiles.erase(next.profiles.begin() + 2);    // big removed
    next.profiles.push_back(test::fast_profile("new", "x", "/m/new.gguf"));
    const auto diff = co_await f.sup.reload(std::make_shared<const config::Config>(next), opts);
    CHECK(diff.changed == std::vector<std::string>{"kev"});
    CHECK(diff.removed == std::vector<std::string>{"big"});
    CHECK(diff.added == std::vector<std::string>{"new"});
    CHECK(diff.unchanged == std::vector<std::string>{"laya"});
    auto s = co_await f.sup.snapshot();
    CHECK(f.status(s, "kev")->state == Phase::draining);  // its lease is still in flight
    CHECK(co_await f.until_alive("big", false));
    k->release();
    CHECK(co_await f.until_alive("kev", false));
    auto again = co_await f.sup.acquire("kev", in(2s));  // restarted with the new profile
    CHECK(again.ok());
    auto gone = co_await f.sup.acquire("big", in(2s));
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().code == Errc::not_found);
    co_await f.sup.shutdown();
  });
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "start laya") == 1);
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "start kev") == 2);
  bool reload_event = false;
  for (const auto& e : f.events) reload_event |= e.type == Event::Type::reload;
  CHECK(reload_event);
}

// Issue 35: reload compares config::child_key, what the child runs. Idle, pin and alias settings
// never restarted it; a context moved from `ctx` into extra_args (the same -c) did, before.
TEST_CASE("lifecycle: reload keeps a child whose idle, pin or aliases changed, or whose ctx moved into extra_args") {
  auto cfg = lifecycle_config(600);
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya", "big"}};
  Fixture f(cfg, opts);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    (co_await f.sup.acquire("kev", in(2s)))->release();
    auto next = cfg;
    auto& kev = next.profiles[0];
    kev.idle_unload_s = 0;
    kev.pin = true;
    kev.alias = {"decider"};
    kev.extra_args = {"-c", std::to_string(kev.ctx)};  // the child reads the last -c: the same context
    kev.ctx = 128;
    const auto diff = co_await f.sup.reload(std::make_shared<const config::Config>(next), opts);
    CHECK(diff.changed.empty());
    CHECK(std::count(diff.unchanged.begin(), diff.unchanged.end(), "kev") == 1);
    auto again = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(again.ok());
    again->release();
    co_await f.sup.shutdown();
  });
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "start kev") == 1);
}

// Issue 35: a waiting request's profile was resolved once, at admission. A reload that removes
// that profile fails it with not_found, even when the new configuration has an alias of that name
// (before, the queue looked the name up again, alias included, and kept it for a child that no
// longer exists).
TEST_CASE("lifecycle: a request in flight across a reload resolves once") {
  auto cfg = lifecycle_config(600);
  Fixture f(cfg);  // one child at a time: laya waits behind kev's lease
  std::optional<Result<Lease>> waited;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    asio::co_spawn(f.ioc, [&]() -> asio::awaitable<void> {
      waited.emplace(co_await f.sup.acquire("laya", in(5s)));
    }, asio::detached);
    bool queued = false;
    for (int i = 0; i < 500 && !queued; ++i) {
      co_await sleep_for(2ms);
      const auto s = co_await f.sup.snapshot();
      const auto* st = f.status(s, "laya");
      queued = st && st->queued > 0;
    }
    REQUIRE(queued);
    auto next = cfg;
    next.profiles[1].name = "verifier";  // laya's model under another name, answering to "laya"
    next.profiles[1].alias = {"laya"};
    co_await f.sup.reload(std::make_shared<const config::Config>(next), {});
    for (int i = 0; i < 500 && !waited; ++i) co_await sleep_for(2ms);
    REQUIRE(waited.has_value());
    REQUIRE_FALSE(waited->ok());
    CHECK(waited->error().code == Errc::not_found);
    k->release();
    auto now = co_await f.sup.acquire("laya", in(2s));  // a new request resolves in the new configuration
    REQUIRE(now.ok());
    CHECK(now->profile() == "verifier");
    now->release();
    co_await f.sup.shutdown();
  });
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "start laya") == 0);
  CHECK(std::count(f.world.events.begin(), f.world.events.end(), "start verifier") == 1);
}

// Issue 35: the door and the supervisor switch versions in one strand turn. reload's `switched`
// (where serve switches the door, whose set_config applies at once on the strand) runs in the turn
// the new version takes effect, so a handler queued behind the reload (a request being resolved)
// never finds the door in one version and admission in the other. The contract: once, in that turn.
TEST_CASE("lifecycle: a reload's switched callback runs once, before any handler queued behind the reload") {
  auto cfg = lifecycle_config(600);
  Fixture f(cfg);
  int switched = 0;
  std::optional<int> seen;  // `switched` as a handler queued behind the reload finds it
  ReloadDiff diff;
  auto next = cfg;
  next.profiles[1].name = "judge";
  bool done = false;
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    const auto& strand = f.sup.strand();
    asio::co_spawn(strand, [&]() -> asio::awaitable<void> {
      diff = co_await f.sup.reload(std::make_shared<const config::Config>(next), {}, [&] { ++switched; });
      done = true;
    }, asio::detached);
    asio::co_spawn(strand, [&]() -> asio::awaitable<void> {  // runs once the reload is queued
      asio::post(strand, [&] { seen = switched; });
      co_return;
    }, asio::detached);
    for (int i = 0; i < 500 && !done; ++i) co_await sleep_for(2ms);
    co_await f.sup.shutdown();
  });
  REQUIRE(seen.has_value());
  CHECK(*seen == 1);
  CHECK(switched == 1);
  CHECK(diff.added == std::vector<std::string>{"judge"});
  CHECK(diff.removed == std::vector<std::string>{"laya"});
}

// Issue 35: a child's load times have one owner, the supervisor. They are stored in state_dir by
// child and what reaches it, and read back at construction: the first start after a restart
// already says how long it should take (the starting event, /status eta_s) and what it costs to
// bring back. (Before, the door kept its own copy and the supervisor started from nothing.)
TEST_CASE("lifecycle: stored load times give a child's first start its expected load, and each start adds one") {
  test::TempDir dir("life-loads");
  auto cfg = test::fast_config({test::fast_profile("kev", "x", "/m/kev.gguf")}, dir.path());
  const std::string key = "kev|" + config::child_key(cfg.profiles[0]);
  for (const std::int64_t ms : {4000, 6000, 5000}) REQUIRE(ledger::record_load_time(cfg.orch.state_dir, key, ms).ok());
  Fixture f(cfg);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    (co_await f.sup.acquire("kev", in(2s)))->release();
    co_await f.sup.shutdown();
  });
  std::optional<double> expected;
  for (const auto& e : f.events)
    if (e.type == Event::Type::phase && e.to == Phase::starting) expected = e.expected_load_s;
  REQUIRE(expected.has_value());
  CHECK(*expected == Approx(5.0));  // the median of the stored loads
  const auto store = ledger::load_load_times(ledger::load_times_path(cfg.orch.state_dir));
  REQUIRE(store.ok());
  CHECK(store->at(key).size() == 4);
}

// Cost-aware eviction through the supervisor: what a call left in a child's slots (Lease::note_context,
// from llama-server's timings) makes that child dearer to bring back, so the other one makes room.
TEST_CASE("lifecycle: the child whose slots hold the longer context stays, the other makes room, and the switch says why") {
  const bool kev_long = GENERATE(true, false);
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya"}, {"kev", "big"}, {"laya", "big"}};
  Fixture f(lifecycle_config(600), opts);
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(k.ok());
    k->note_context(kev_long ? 4000 : 10, 1000);  // 4 s of prefill at 1,000 tokens/s, or 0.01 s
    k->release();
    auto l = co_await f.sup.acquire("laya", in(2s));
    REQUIRE(l.ok());
    l->note_context(kev_long ? 10 : 4000, 1000);
    l->release();
    (void)co_await f.sup.snapshot();  // the release is in: laya idle (a busy child would stay for that)
    auto b = co_await f.sup.acquire("big", in(2s));
    REQUIRE(b.ok());
    b->release();
    const std::string stays = kev_long ? "kev" : "laya", goes = kev_long ? "laya" : "kev";
    CHECK(f.world.alive == std::set<std::string>{stays, "big"});
    const auto s = co_await f.sup.snapshot();
    REQUIRE_FALSE(s.recent_switches.empty());
    CHECK(s.recent_switches.back().from == goes);
    CHECK(s.recent_switches.back().to == "big");
    CHECK(s.recent_switches.back().reason == "cheapest to reload");
    co_await f.sup.shutdown();
  });
}

// One configuration per reload, shared by pointer: a version stays alive while a child runs it or
// a caller holds it, not for the life of the process (before: every version was kept). The last
// reload removes kev, whose child ran the version before: that one goes too.
TEST_CASE("lifecycle: after 100 reloads only the configuration in force is alive") {
  asio::io_context ioc;
  FakeWorld world;
  auto first = std::make_shared<const config::Config>(lifecycle_config(600));
  const std::weak_ptr<const config::Config> first_seen = first;
  Supervisor sup(ioc.get_executor(), std::move(first), std::make_unique<FakeEffects>(world));
  std::vector<std::weak_ptr<const config::Config>> versions;
  long alive = -1;
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto k = co_await sup.acquire("kev", in(2s));  // kev's child runs the first version
    REQUIRE(k.ok());
    k->release();
    for (int i = 0; i < 100; ++i) {
      auto next = lifecycle_config(600);
      next.profiles[1].ctx += 256 * (i % 2);  // laya changed every other time
      if (i % 2) next.profiles.erase(next.profiles.begin());  // kev (running) removed, then back
      auto p = std::make_shared<const config::Config>(std::move(next));
      versions.push_back(p);
      co_await sup.reload(std::move(p), {});
    }
    alive = std::count_if(versions.begin(), versions.end(), [](const auto& v) { return !v.expired(); });
    co_await sup.shutdown();
  });
  CHECK(first_seen.expired());
  CHECK(alive == 1);
  CHECK(!versions.back().expired());
}
