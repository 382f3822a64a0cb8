// Host RAM at start time (each ChildSpec's host figure in SupervisorOptions::children, Effects::host_ram_available): a model
// planned co-resident starts beside the others only while the memory the plan counted on is there.
#include <catch2/catch.hpp>

#include "support/fake_effects.hpp"
#include "support/supervisor_fixture.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t GiB = 1ULL << 30;

// kev and laya may co-reside; each child takes 2 GiB of host RAM; `available` is what is free now.
std::vector<std::string> kev_then_laya(std::optional<std::uint64_t> available, int* reads = nullptr,
                                       bool pin_kev = false, bool preload_kev = false) {
  asio::io_context ioc;
  test::FakeWorld world;
  world.ram_available = available;
  SupervisorOptions opts;
  opts.allowed_sets = {{"kev", "laya"}};
  for (const char* name : {"kev", "laya"}) {
    ledger::ChildSpec c;
    c.name = name;
    c.members = {name};
    c.host_alone = 2 * GiB;
    opts.children.push_back(c);
  }
  auto kev = test::fast_profile("kev", "x", "/m/kev.gguf");
  kev.pin = pin_kev;
  auto cfg = test::fast_config({kev, test::fast_profile("laya", "x", "/m/laya.gguf")}, std::filesystem::path());
  if (preload_kev) cfg.orch.preload = {"kev"};
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<test::FakeEffects>(world), opts);
  if (preload_kev) sup.start_wanted();
  test::run_co(ioc, [&]() -> asio::awaitable<void> {
    for (const char* m : {"kev", "laya"}) {
      auto l = co_await sup.acquire(m, test::in(2s));
      REQUIRE(l.ok());
      l->release();
    }
    co_await sup.shutdown();
  });
  if (reads) *reads = world.ram_reads;
  return world.events;
}

}  // namespace

TEST_CASE("ram pressure: a co-resident model starts beside the other while host RAM holds it") {
  int reads = 0;
  const auto events = kev_then_laya(8 * GiB, &reads);
  CHECK(std::vector<std::string>(events.begin(), events.begin() + 2) == std::vector<std::string>{"start kev", "start laya"});
  CHECK(reads >= 1);  // asked when laya waited to start beside kev (not for kev alone)
}

TEST_CASE("ram pressure: with less host RAM free than the plan counted on, the other child is stopped first") {
  // 2 GiB + the 1 GiB reserve are needed; 2.5 GiB are free now.
  const auto events = kev_then_laya(5 * GiB / 2);
  CHECK(std::vector<std::string>(events.begin(), events.begin() + 3) ==
        std::vector<std::string>{"start kev", "stop kev", "start laya"});
}

TEST_CASE("ram pressure: host RAM unknown changes nothing") {
  const auto events = kev_then_laya(std::nullopt);
  CHECK(std::vector<std::string>(events.begin(), events.begin() + 2) == std::vector<std::string>{"start kev", "start laya"});
}

TEST_CASE("ram pressure: a pinned child is never stopped for it (the plan's sets stay)") {
  const auto events = kev_then_laya(5 * GiB / 2, nullptr, true);
  REQUIRE(events.size() >= 2);
  CHECK(std::vector<std::string>(events.begin(), events.begin() + 2) == std::vector<std::string>{"start kev", "start laya"});
}

// Only a pin is spared: a preload is an ordinary child once started, stopped first like any other.
TEST_CASE("ram pressure: a preloaded child is stopped first like any other") {
  const auto events = kev_then_laya(5 * GiB / 2, nullptr, false, true);
  REQUIRE(events.size() >= 3);
  CHECK(std::vector<std::string>(events.begin(), events.begin() + 3) ==
        std::vector<std::string>{"start kev", "stop kev", "start laya"});
}
