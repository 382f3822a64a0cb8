// `kevlaya-orch inspect` run as a process: text summary, JSON, and errors on bad files.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/models.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;

namespace {
CmdResult inspect(const std::string& args) { return run_command(orch_binary().string() + " inspect " + args); }
}  // namespace

TEST_CASE("inspect: text summary of the stories-shaped model", "[gguf][cli]") {
  auto r = inspect(tiny_llama().string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("architecture  llama") != std::string::npos);
  CHECK(r.output.find("layers        5") != std::string::npos);
  CHECK(r.output.find("heads         8 (KV heads 4)") != std::string::npos);
  CHECK(r.output.find("head dims     k 8, v 8") != std::string::npos);
  CHECK(r.output.find("embd / ffn    64 / 172") != std::string::npos);
  CHECK(r.output.find("ctx_train     2048") != std::string::npos);
  CHECK(r.output.find("vocab         512") != std::string::npos);
  CHECK(r.output.find("quant         F32") != std::string::npos);
  CHECK(r.output.find("by type       f32 ") != std::string::npos);
}

TEST_CASE("inspect: --json carries the model facts", "[gguf][cli]") {
  auto r = inspect(tiny_llama().string() + " --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j.at("architecture") == "llama");
  CHECK(j.at("n_layer") == 5);
  CHECK(j.at("n_embd") == 64);
  CHECK(j.at("n_head") == 8);
  CHECK(j.at("n_head_kv") == 4);
  CHECK(j.at("n_ff") == 172);
  CHECK(j.at("n_vocab") == 512);
  CHECK(j.at("layer_bytes").size() == 5);
  CHECK(j.at("bytes_by_type").at("f32") == j.at("tensor_bytes"));
  CHECK_FALSE(j.contains("adapter"));
}

TEST_CASE("inspect: adapter facts of a LoRA file", "[gguf][cli]") {
  TempDir dir("inspect");
  REQUIRE(run_command(tiny_gguf_tool().string() + " standins --dir " + dir.path().string()).exit_code == 0);
  auto r = inspect((dir / "kev-lora-a.gguf").string() + " --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j.at("type") == "adapter");
  CHECK(j.at("adapter").at("type") == "lora");
  CHECK(j.at("adapter").at("alpha") == 16.0);
  CHECK(j.at("adapter").at("rank") == 8);
  CHECK(j.at("adapter").at("targets").at(0) == "blk.0.attn_q.weight");
  auto t = inspect((dir / "kev-lora-a.gguf").string());
  REQUIRE(t.exit_code == 0);
  CHECK(t.output.find("adapter       lora, alpha 16, rank 8, 8 target tensors") != std::string::npos);
}

TEST_CASE("inspect: missing and corrupt files exit 1 with a clear error", "[gguf][cli]") {
  auto missing = inspect("/nonexistent/x.gguf");
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("cannot open /nonexistent/x.gguf") != std::string::npos);
  TempDir dir("inspect");
  write_text(dir / "bad.gguf", "GGUF\x01");
  auto bad = inspect((dir / "bad.gguf").string());
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("truncated version (need 4 bytes, 1 left), at byte offset 4") != std::string::npos);
}
