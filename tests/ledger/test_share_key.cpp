// Shared-base grouping from profiles (issue 35): share_key is config::fingerprint of the child
// without each member's LoRA and name, so profiles on one base with their own adapters still share,
// and a flag reaches the key however it is written.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "gguf/writer.hpp"
#include "ledger/inputs.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;
namespace fs = std::filesystem;

using test::member;

TEST_CASE("share key: members on one base with their own LoRA, name and aliases share it") {
  auto a = member("kev", "/m/base.gguf");
  a.lora = {{"a", "/l/a.gguf", 1.0}};
  a.alias = {"decider"};
  auto b = member("laya", "/m/base.gguf");
  b.lora = {{"b", "/l/b.gguf", 0.5}};
  CHECK(share_key(a) == share_key(b));
  b.gpu = {1};  // asks for another device: one child has one placement
  CHECK(share_key(a) != share_key(b));
  b.gpu.clear();
  b.extra_args = {"-ctk", "q8_0"};
  CHECK(share_key(a) != share_key(b));
}

// Before issue 35 the key concatenated the profile fields and extra_args as written: `ctx: 8192`
// and `extra_args: [-c, 8192]` (the same child) did not share.
TEST_CASE("share key: a flag in extra_args shares with the same flag as a profile key") {
  auto a = member("kev", "/m/base.gguf");
  a.ctx = 8192;
  auto b = member("laya", "/m/base.gguf");
  b.extra_args = {"-c", "8192"};
  CHECK(share_key(a) == share_key(b));
}

TEST_CASE("share key: two profiles on one tiny base with different LoRA files plan one shared-base child") {
  test::TempDir dir("share-key-lora");
  gguf::TinyModelSpec base;
  REQUIRE(gguf::write_tiny_model(dir / "base.gguf", base).ok());
  REQUIRE(gguf::write_tiny_lora(dir / "a.gguf", base, gguf::TinyLoraSpec{}).ok());
  REQUIRE(gguf::write_tiny_lora(dir / "b.gguf", base, gguf::TinyLoraSpec{}).ok());
  config::Config cfg;
  auto a = member("kev", dir / "base.gguf");
  a.lora = {{"a", dir / "a.gguf", 1.0}};
  auto b = member("laya", dir / "base.gguf");
  b.lora = {{"b", dir / "b.gguf", 0.5}};
  b.alias = {"verifier"};
  cfg.profiles = {a, b};
  const auto g = gather(cfg);
  REQUIRE(g.ok());
  const auto plan = make_plan(g->profiles, PlanOptions{8192 * kMiB, 0, {}});
  REQUIRE(plan.shared_children().size() == 1);
  CHECK(plan.children[0].members == std::vector<std::string>{"kev", "laya"});
  CHECK(plan.children[0].adapters.size() == 2);
}
