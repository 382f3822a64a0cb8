// LoRA adapter compatibility, on tiny GGUF files written by gguf/writer.
#include <catch2/catch.hpp>

#include "gguf/gguf.hpp"
#include "gguf/writer.hpp"
#include "ledger/ledger.hpp"
#include "support/paths.hpp"

using namespace kevlaya;

namespace {
struct Files {
  gguf::File base, adapter;
};

Files write_pair(const test::TempDir& dir, const gguf::TinyModelSpec& base, const gguf::TinyModelSpec& lora_base) {
  REQUIRE(gguf::write_tiny_model(dir / "base.gguf", base).ok());
  REQUIRE(gguf::write_tiny_lora(dir / "lora.gguf", lora_base, gguf::TinyLoraSpec{}).ok());
  auto b = gguf::read_file(dir / "base.gguf");
  auto a = gguf::read_file(dir / "lora.gguf");
  REQUIRE(b.ok());
  REQUIRE(a.ok());
  return {*b, *a};
}
}  // namespace

TEST_CASE("adapter written for its base passes the check") {
  test::TempDir dir("ledger-lora-ok");
  const auto f = write_pair(dir, {}, {});
  CHECK(ledger::check_adapter(f.base, f.adapter, "lora.gguf").ok());
}

TEST_CASE("adapter for a wider base is an error naming the tensor") {
  test::TempDir dir("ledger-lora-shape");
  gguf::TinyModelSpec wide;
  wide.n_embd = 128;
  const auto f = write_pair(dir, {}, wide);
  const auto st = ledger::check_adapter(f.base, f.adapter, "lora.gguf");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("blk.0.attn_q.weight") != std::string::npos);
  CHECK(st.error().message.find("lora.gguf") != std::string::npos);
}

TEST_CASE("adapter targeting a layer the base lacks is an error naming the tensor") {
  test::TempDir dir("ledger-lora-layers");
  gguf::TinyModelSpec deeper;
  deeper.n_layer = 3;
  const auto f = write_pair(dir, {}, deeper);
  const auto st = ledger::check_adapter(f.base, f.adapter, "lora.gguf");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("blk.2.") != std::string::npos);
  CHECK(st.error().message.find("does not exist") != std::string::npos);
}

TEST_CASE("adapter of another architecture is an error") {
  test::TempDir dir("ledger-lora-arch");
  auto f = write_pair(dir, {}, {});
  f.adapter.kv["general.architecture"].v = std::string("qwen2");
  const auto st = ledger::check_adapter(f.base, f.adapter, "lora.gguf");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("qwen2") != std::string::npos);
}

TEST_CASE("tied output is detected from the tensor list") {
  gguf::File f;
  f.tensors.push_back({"token_embd.weight", {64, 512}, 0, 0});
  CHECK(ledger::output_is_tied(f));
  f.tensors.push_back({"output.weight", {64, 512}, 0, 0});
  CHECK_FALSE(ledger::output_is_tied(f));
}
