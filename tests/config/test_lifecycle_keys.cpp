// Lifecycle keys (docs/lifecycle.md): idle_unload_s (orchestrator default, per profile), pin,
// keep_alive_max_s and preload.
#include <catch2/catch.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

void write_tree(const TempDir& d, const std::string& top, const std::string& kev_extra = "") {
  write_text(d / "kevlaya.yaml", top);
  write_text(d / "models/kev.gguf", "x");
  write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../models/kev.gguf\n" + kev_extra);
  write_text(d / "profiles/laya.yaml", "name: laya\nmodel: ../models/kev.gguf\nalias: verifier\n");
}

}  // namespace

TEST_CASE("lifecycle keys: defaults and per-profile idle_unload_s", "[config]") {
  TempDir d("cfg-life");
  write_tree(d, "idle_unload_s: 120\nkeep_alive_max_s: -1\npreload: [verifier]\n", "idle_unload_s: 0\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& c = r.config;
  CHECK(c.orch.idle_unload_s == 120);
  CHECK(c.orch.keep_alive_max_s == -1);
  CHECK(c.orch.preload == std::vector<std::string>{"verifier"});
  CHECK(c.idle_unload_s(*c.find_profile("kev")) == 0);
  CHECK(c.idle_unload_s(*c.find_profile("laya")) == 120);
}

TEST_CASE("lifecycle keys: the built-in default is 600 s, a pin is never idle-unloaded", "[config]") {
  TempDir d("cfg-life-default");
  write_tree(d, "gpu: {vram_mib: 6144}\n", "pin: true\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  REQUIRE(r.ok());
  CHECK(r.config.orch.idle_unload_s == 600);
  CHECK(r.config.find_profile("kev")->pin);
  CHECK(r.config.idle_unload_s(*r.config.find_profile("kev")) == 0);
  CHECK(r.config.idle_unload_s(*r.config.find_profile("laya")) == 600);
}

TEST_CASE("lifecycle keys: an unknown preload and bad values are errors at their line", "[config]") {
  TempDir d("cfg-life-bad");
  write_tree(d, "preload: [kevv]\nidle_unload_s: -3\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  CHECK_FALSE(r.ok());
  const auto all = dump(r);
  INFO(all);
  CHECK(all.find("kevlaya.yaml:1:10: error: preload names unknown model 'kevv'") != std::string::npos);
  CHECK(all.find("kevlaya.yaml:2:16: error: idle_unload_s") != std::string::npos);
}

TEST_CASE("loading_messages: comments by default, reasoning globally or per profile, a bad value at its line", "[config]") {
  using kevlaya::config::LoadingMessages;
  TempDir d("cfg-loading-messages");
  write_tree(d, "loading_messages: reasoning\n", "loading_messages: comments\n");
  auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.loading_messages(*r.config.find_profile("kev")) == LoadingMessages::comments);
  CHECK(r.config.loading_messages(*r.config.find_profile("laya")) == LoadingMessages::reasoning);
  write_tree(d, "idle_unload_s: 60\n");
  r = cfg::load(d / "kevlaya.yaml");
  REQUIRE(r.ok());
  CHECK(r.config.loading_messages(*r.config.find_profile("laya")) == LoadingMessages::comments);
  write_tree(d, "loading_messages: thinking\n");
  r = cfg::load(d / "kevlaya.yaml");
  CHECK_FALSE(r.ok());
  CHECK(dump(r).find("kevlaya.yaml:1:19: error: loading_messages") != std::string::npos);
}

TEST_CASE("evict: normal by default, protect with its idle and max_wait, bad values at their line", "[config]") {
  TempDir d("cfg-evict");
  write_tree(d, "idle_unload_s: 600\n", "evict:\n  policy: protect\n  idle_s: 45\n  max_wait_s: 90\n");
  auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& kev = r.config.find_profile("kev")->evict;
  CHECK(kev.protect);
  CHECK(kev.idle_s == 45);
  CHECK(kev.max_wait_s == 90);
  CHECK(kevlaya::config::evict_text(kev) == "protect (idle 45 s, max wait 90 s)");
  CHECK_FALSE(r.config.find_profile("laya")->evict.protect);
  CHECK(kevlaya::config::evict_text(r.config.find_profile("laya")->evict) == "normal");
  write_tree(d, "idle_unload_s: 600\n", "evict:\n  policy: keep\n  max_wait_s: 0\n");
  r = cfg::load(d / "kevlaya.yaml");
  CHECK_FALSE(r.ok());
  CHECK(dump(r).find("kev.yaml:4:11: error: evict.policy must be one of normal, protect") != std::string::npos);
  CHECK(dump(r).find("kev.yaml:5:15: error: evict.max_wait_s") != std::string::npos);
}
