// Prefetch wiring in ProcessEffects: after one child is up, the predicted next profile's model is
// read into the page cache; a hinted profile too; the memory floor from the config is honoured.
#include <catch2/catch.hpp>
#include <unistd.h>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "warm/page_cache.hpp"
#include "warm/warm_support.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using kevlaya::test::TempDir;
namespace fs = std::filesystem;

namespace {

// Kev on the stories-shaped model, Laya on its own copy (so its pages can be dropped), a kev -> laya pipeline.
config::Config two_models(const TempDir& dir, std::int64_t floor_mib) {
  fs::copy_file(test::tiny_llama(), dir / "laya.gguf");
  config::Config cfg;
  cfg.orch = test::warm_orch(dir.path(), true);
  cfg.orch.prefetch.min_available_mib = floor_mib;
  cfg.profiles.push_back(test::warm_profile("kev", test::standin_binary().string(), test::tiny_llama()));
  cfg.profiles.push_back(test::warm_profile("laya", test::standin_binary().string(), dir / "laya.gguf"));
  for (auto& p : cfg.profiles) p.slot_cache.enabled = false;
  config::Pipeline pl;
  pl.name = "dv";
  pl.stages.resize(2);
  pl.stages[0].model = "kev";
  pl.stages[1].model = "laya";
  cfg.pipelines.push_back(pl);
  return cfg;
}

bool droppable(const fs::path& p) {
  ::sync();
  return warm::drop_from_cache(p).ok() && warm::resident_pct(p) < 50.0;
}

}  // namespace

TEST_CASE("prefetch: the next pipeline stage's model is read while the first one serves", "[warm]") {
  TempDir dir("warm-prefetch-next");
  auto cfg = two_models(dir, 0);
  if (!droppable(dir / "laya.gguf")) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  asio::io_context ioc;
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  auto out = test::start(ioc, fx, cfg.profiles[0]);
  REQUIRE(out.ok());
  fx.wait_prefetch_idle();
  CHECK(warm::resident_pct(dir / "laya.gguf") > 95.0);
  test::stop(ioc, fx, "kev");
  auto laya = test::start(ioc, fx, cfg.profiles[1]);
  REQUIRE(laya.ok());
  CHECK(laya.report->prefetch_resident_pct > 95.0);
  test::stop(ioc, fx, "laya");
}

TEST_CASE("prefetch: a hinted profile is prefetched, a cold start reports its low residency", "[warm]") {
  TempDir dir("warm-prefetch-hint");
  auto cfg = two_models(dir, 0);
  cfg.pipelines.clear();
  if (!droppable(dir / "laya.gguf")) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  asio::io_context ioc;
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  SECTION("hinted") {
    fx.likely_next("laya");
    fx.wait_prefetch_idle();
    CHECK(warm::resident_pct(dir / "laya.gguf") > 95.0);
  }
  SECTION("not hinted: the switch record shows the cold file") {
    auto laya = test::start(ioc, fx, cfg.profiles[1]);
    REQUIRE(laya.ok());
    CHECK(laya.report->prefetch_resident_pct < 50.0);
    test::stop(ioc, fx, "laya");
  }
}

TEST_CASE("prefetch: nothing is read under prefetch.min_available_mib", "[warm]") {
  TempDir dir("warm-prefetch-floor");
  auto cfg = two_models(dir, std::int64_t(1) << 40);  // far above any machine's MemAvailable
  if (!droppable(dir / "laya.gguf")) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  asio::io_context ioc;
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  auto out = test::start(ioc, fx, cfg.profiles[0]);
  REQUIRE(out.ok());
  fx.wait_prefetch_idle();
  CHECK(warm::resident_pct(dir / "laya.gguf") < 50.0);
  test::stop(ioc, fx, "kev");
}

// The effects follow the configuration the supervisor applies: after a reload moves laya's model,
// the prediction reads the new file (the effects kept the first version's profiles and read the old one).
TEST_CASE("prefetch: after a reload that moves a model, the new file is the one prefetched", "[warm]") {
  TempDir dir("warm-prefetch-reload");
  auto cfg = two_models(dir, 0);
  fs::copy_file(test::tiny_llama(), dir / "laya-moved.gguf");
  if (!droppable(dir / "laya.gguf") || !droppable(dir / "laya-moved.gguf"))
    KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  asio::io_context ioc;
  auto owned = std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg));
  ProcessEffects& fx = *owned;
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::move(owned));
  auto next = cfg;
  next.profiles[1].model = dir / "laya-moved.gguf";
  test::run_co(ioc, [&]() -> asio::awaitable<void> {
    co_await sup.reload(std::make_shared<const config::Config>(next), SupervisorOptions{});
    auto kev = co_await sup.acquire("kev", test::in(std::chrono::seconds(30)));  // then laya is predicted
    REQUIRE(kev.ok());
    kev->release();
    fx.wait_prefetch_idle();
    CHECK(warm::resident_pct(dir / "laya-moved.gguf") > 95.0);
    co_await sup.shutdown();
  });
}
