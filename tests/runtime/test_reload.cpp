// The pure parts of hot reload: what needs a restart, and the file stamp --watch-config polls.
#include <catch2/catch.hpp>

#include "runtime/reload.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::test;

TEST_CASE("reload: the listen address and directories need a restart, the rest does not") {
  config::OrchestratorCfg a, b;
  CHECK(runtime::needs_restart(a, b).empty());
  b.listen.port = 9090;
  b.api_keys = {"k"};
  b.scheduling.drain_timeout_s = 5;
  const auto n = runtime::needs_restart(a, b);
  REQUIRE(n.size() == 1);
  CHECK(n[0] == "listen: 127.0.0.1:8080 -> 127.0.0.1:9090 (needs a restart)");
}

TEST_CASE("reload: the configuration files' stamp changes when a profile is edited, added or removed") {
  TempDir d("reload-stamp");
  write_text(d / "kevlaya.yaml", "x: 1\n");
  write_text(d / "profiles/kev.yaml", "name: kev\n");
  config::OrchestratorCfg o;
  o.profiles_dir = d / "profiles";
  o.pipelines_dir = d / "pipelines";
  const auto s0 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(runtime::config_files_stamp(d / "kevlaya.yaml", o) == s0);
  write_text(d / "profiles/kev.yaml", "name: kev\nctx: 512\n");  // size changes
  const auto s1 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(s1 != s0);
  write_text(d / "profiles/laya.yaml", "name: laya\n");
  const auto s2 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(s2 != s1);
  std::filesystem::remove(d / "profiles/laya.yaml");
  CHECK(runtime::config_files_stamp(d / "kevlaya.yaml", o) == s1);
}
