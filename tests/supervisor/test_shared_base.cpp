// Shared-base mode against fake Effects: the members of a group are served by one child started
// with every adapter at scale 0; a lease selects the member's adapters through lora_scales().
#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "support/supervisor_fixture.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::in;
using kevlaya::test::run_co;
using kevlaya::test::sleep_for;
using Scales = std::vector<ledger::LoraScale>;  // {adapter id, scale}

namespace {

config::Config three_profiles() {
  auto kev = test::fast_profile("kev", "x", "/m/base.gguf");
  kev.parallel = 2;
  kev.alias = {"decider"};
  kev.lora = {{"kev-a", "/m/kev-a.gguf", 1.0}};
  auto laya = test::fast_profile("laya", "x", "/m/base.gguf");
  laya.parallel = 2;
  laya.lora = {{"laya-b", "/m/laya-b.gguf", 0.5}};
  auto other = test::fast_profile("other", "x", "/m/other.gguf");
  return test::fast_config({kev, laya, other}, std::filesystem::path());
}

SupervisorOptions group_options() {
  SupervisorOptions o;
  ledger::ChildSpec g;
  g.name = "kev+laya";
  g.members = {"kev", "laya"};
  g.adapters = {{"kev-a", "/m/kev-a.gguf", 0, 1.0}, {"laya-b", "/m/laya-b.gguf", 0, 0.5}};
  g.scales = {{"kev", {{0, 1.0}, {1, 0.0}}}, {"laya", {{0, 0.0}, {1, 0.5}}}};
  o.children = {g};
  return o;
}


}  // namespace

TEST_CASE("shared base: members share one child started with every adapter at scale 0") {
  test::SupervisorFixture f(three_profiles(), group_options());  // world.ready: the on_ready calls
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("decider", in(2s));
    REQUIRE(a.ok());
    CHECK(a->profile() == "kev");
    CHECK(a->lora_scales() == Scales{{0, 1.0}, {1, 0.0}});  // kev-a on, laya-b off
    const auto port = a->endpoint().port;
    a->release();
    auto b = co_await f.sup.acquire("laya", in(2s));
    REQUIRE(b.ok());
    CHECK(b->profile() == "laya");
    CHECK(b->endpoint().port == port);  // the same child
    CHECK(b->lora_scales() == Scales{{0, 0.0}, {1, 0.5}});
    b->release();
    auto snap = co_await f.sup.snapshot();
    std::map<std::string, Phase> states;
    for (const auto& p : snap.profiles) states[p.name] = p.state;
    CHECK(states == std::map<std::string, Phase>{
                        {"kev", Phase::ready}, {"laya", Phase::ready}, {"other", Phase::stopped}});
    CHECK(snap.recent_switches.size() == 1);
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev+laya", "stop kev+laya"});
  REQUIRE(f.world.started.size() == 1);
  const auto& child = f.world.started.front();
  CHECK(child.model == "/m/base.gguf");
  REQUIRE(child.lora.size() == 2);
  CHECK(child.lora[0].path == "/m/kev-a.gguf");
  CHECK(child.lora[0].scale == 0.0);
  CHECK(child.lora[1].path == "/m/laya-b.gguf");
  CHECK(child.lora[1].scale == 0.0);
  CHECK(child.alias.empty());
  CHECK(f.world.ready == std::vector<std::string>{"kev+laya"});
}

TEST_CASE("shared base: leases of two members are held at once without process work") {
  test::SupervisorFixture f(three_profiles(), group_options());
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await f.sup.acquire("kev", in(2s));
    REQUIRE(a.ok());
    auto b = co_await f.sup.acquire("laya", in(2s));  // parallel 2: the second slot of the same child
    REQUIRE(b.ok());
    CHECK(a->endpoint().port == b->endpoint().port);
    auto snap = co_await f.sup.snapshot();
    for (const auto& p : snap.profiles) {
      if (p.name != "other") CHECK(p.in_flight == 2);
    }
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev+laya", "stop kev+laya"});
}

TEST_CASE("shared base: a profile outside the group still rotates with the group's child") {
  test::SupervisorFixture f(three_profiles(), group_options());
  run_co(f.ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "other", "laya", "kev"}) {
      auto l = co_await f.sup.acquire(m, in(2s));
      REQUIRE(l.ok());
      CHECK(l->lora_scales().empty() == (std::string(m) == "other"));
    }
    co_await f.sup.shutdown();
  });
  CHECK(f.world.events == std::vector<std::string>{"start kev+laya", "stop kev+laya", "start other", "stop other",
                                                   "start kev+laya", "stop kev+laya"});
}

TEST_CASE("shared base: an allowed set naming a member keeps the group's child alive with it") {
  asio::io_context ioc;
  test::FakeWorld w;
  auto opt = group_options();
  opt.allowed_sets = {{"kev+laya", "other"}};  // in child names, as the plan states them
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(three_profiles()), std::make_unique<test::FakeEffects>(w), opt);
  run_co(ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "other", "laya"}) {
      auto l = co_await sup.acquire(m, in(2s));
      REQUIRE(l.ok());
    }
    co_await sup.shutdown();
  });
  const std::vector<std::string> head(w.events.begin(), w.events.begin() + 2);
  CHECK(head == std::vector<std::string>{"start kev+laya", "start other"});
  CHECK(std::count(w.events.begin(), w.events.end(), "start kev+laya") == 1);
}

TEST_CASE("shared base: a group naming an unknown profile is ignored, members keep their own children") {
  asio::io_context ioc;
  test::FakeWorld w;
  SupervisorOptions opt;
  ledger::ChildSpec unknown;
  unknown.name = "kev+nobody";
  unknown.members = {"kev", "nobody"};
  opt.children = {unknown};
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(three_profiles()), std::make_unique<test::FakeEffects>(w), opt);
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto l = co_await sup.acquire("kev", in(2s));
    REQUIRE(l.ok());
    CHECK(l->lora_scales().empty());
    co_await sup.shutdown();
  });
  CHECK(w.events == std::vector<std::string>{"start kev", "stop kev"});
}
