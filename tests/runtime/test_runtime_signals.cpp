// The one signal policy (runtime/runtime.hpp) holds from Runtime::open on: `serve` prints
// "listening on" before it runs, and a SIGTERM in between must drain like any other, not kill the
// door with the default action (exit 143, seen once in a loaded suite run).
#include <catch2/catch.hpp>

#include <csignal>

#include "config/config.hpp"
#include "runtime/runtime.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"

using namespace kevlaya;

TEST_CASE("a SIGTERM between open() and run() is caught and ends run() as a signal", "[runtime]") {
  test::TempDir dir("runtime-early-signal");
  test::write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + test::standin_binary().string() +
                                                  "\nmodel: " + test::tiny_llama().string() + "\nngl: 0\nctx: 256\n");
  test::write_text(dir / "pipelines/.keep", "");
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nlog_dir: logs\n");
  auto loaded = config::load(config::Source{dir / "kevlaya.yaml", {}});
  std::string said;
  for (const auto& d : loaded.diagnostics) said += d.format() + "\n";
  INFO(said);
  REQUIRE(loaded.ok());
  auto rt = runtime::Runtime::open(std::move(loaded.config));
  REQUIRE(rt);
  REQUIRE(::raise(SIGTERM) == 0);  // before run(): the old code died here (Catch2 reports SIGTERM)
  CHECK((*rt)->run({}));           // the pending signal is taken at once: interrupted
}
