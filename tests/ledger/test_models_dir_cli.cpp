// `plan --models-dir` and `init`: each model of a folder fitted by the ledger, explained per model,
// and written out as a configuration that loads back to the same choice.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

// models/small.gguf (trained 2048) and models/long.gguf (trained 1048576: its KV decides the ctx).
void write_models(const test::TempDir& dir) {
  fs::create_directories(dir / "models");
  REQUIRE(gguf::write_tiny_model(dir / "models/small.gguf", gguf::stories_shaped_spec()).ok());
  auto spec = gguf::big_model_spec(32);
  spec.n_ctx_train = 1 << 20;
  REQUIRE(gguf::write_tiny_model(dir / "models/long.gguf", spec).ok());
}

test::CmdResult in_dir(const test::TempDir& dir, const std::string& args) {
  return test::run_command("cd '" + dir.path().string() + "' && " + test::orch_binary().string() + " " + args);
}

}  // namespace

TEST_CASE("plan --models-dir --vram-mib explains the ctx/ngl/parallel chosen for each model") {
  test::TempDir dir("models-dir-plan");
  write_models(dir);
  const auto j = in_dir(dir, "plan --models-dir models --vram-mib 1536 --json");
  INFO(j.output);
  REQUIRE(j.exit_code == 0);
  const auto plan = nlohmann::json::parse(j.output);
  const auto& fits = plan["models_dir"];
  REQUIRE(fits.size() == 2);
  CHECK(fits[0]["profile"] == "long");
  const int long_ctx = fits[0]["ctx"];
  CHECK(long_ctx < (1 << 20));  // its trained context does not fit in 1536 MiB
  CHECK(long_ctx > 4096);
  CHECK(fits[0]["ngl"] == -1);
  CHECK(fits[1]["profile"] == "small");
  CHECK(fits[1]["ctx"] == 4 * 2048);
  CHECK(fits[1]["parallel"] == 4);
  // The ledger's bill of each uses the chosen flags.
  CHECK(plan["profiles"][0]["estimate"]["n_ctx"] == long_ctx);
  CHECK(plan["ok"] == true);

  const auto t = in_dir(dir, "plan --models-dir models --vram-mib 1536");
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  CHECK(t.output.find("models_dir (each model fitted alone to the budget):") != std::string::npos);
  CHECK(t.output.find("small: ngl all, ctx 8192, parallel 4: all layers, 4 slots with the trained context 2048 each "
                      "fit the GPU budget") != std::string::npos);
  const std::string c = std::to_string(long_ctx);
  CHECK(t.output.find("long: ngl all, ctx " + c + ", parallel 1: all layers; ctx " + c +
                      " is the largest that fits the GPU budget (trained 1048576)") != std::string::npos);
}

TEST_CASE("plan --models-dir: a GPU too small for any layer of a model is refused with the reason") {
  test::TempDir dir("models-dir-plan-small");
  write_models(dir);
  const auto r = in_dir(dir, "plan --models-dir models --vram-mib 700");  // 444 MiB budget < 450 overhead
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("does not fit the GPU budget even at ctx") != std::string::npos);
  CHECK(r.output.find("cannot fit even alone") != std::string::npos);
}

// Also guards the false "no model (*.gguf) to serve" warning for a folder whose models all have
// explicit profiles (it went to the output and broke `plan --json` on what init wrote).
TEST_CASE("init writes the configuration serve --models-dir uses, and it loads back to the same choice", "[init]") {
  test::TempDir dir("models-dir-init");
  write_models(dir);
  const auto r = in_dir(dir, "init conf --models-dir models --vram-mib 1536");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string small = test::read_text(dir / "conf/profiles/small.yaml");
  CHECK(small.find("ctx: 8192\nparallel: 4\n") != std::string::npos);
  CHECK(small.find("# ngl all, ctx 8192, parallel 4: all layers, 4 slots") != std::string::npos);
  CHECK(test::read_text(dir / "conf/kevlaya.yaml").find("gpu:\n  vram_mib: 1536\n") != std::string::npos);
  // The written profiles override the folder's models of the same name: the plan is the same.
  const auto p = in_dir(dir, "plan conf/kevlaya.yaml --json");
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  const auto plan = nlohmann::json::parse(p.output);
  CHECK(plan["models_dir"].empty());  // nothing left to fit: both are explicit now
  CHECK(plan["profiles"][1]["name"] == "small");
  CHECK(plan["profiles"][1]["estimate"]["n_ctx"] == 8192);
  const auto check = in_dir(dir, "check conf/kevlaya.yaml");
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("ok: 0 error(s), 0 warning(s)") != std::string::npos);
  // A second init does not overwrite the user's edits.
  const auto again = in_dir(dir, "init conf --models-dir models");
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("exists; nothing written (--force overwrites)") != std::string::npos);
}
