// Split models (llama-gguf-split's NAME-0000k-of-0000N.gguf): the reader gathers every shard's
// tensors, so the ledger prices the whole model, not its first shard.
#include <catch2/catch.hpp>

#include "gguf/builder.hpp"
#include "gguf/gguf.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using kevlaya::test::TempDir;

namespace {

constexpr std::uint64_t kEmbd = 64, kFf = 128, kVocab = 320;

void llama_meta(gguf::Builder& b) {
  b.kv_string("general.architecture", "llama");
  b.kv_u32("llama.block_count", 2);
  b.kv_u32("llama.embedding_length", kEmbd);
  b.kv_u32("llama.feed_forward_length", kFf);
  b.kv_u32("llama.attention.head_count", 4);
  b.kv_u32("llama.attention.head_count_kv", 2);
  b.kv_u32("llama.context_length", 2048);
}

void block(gguf::Builder& b, int i) {
  const std::string p = "blk." + std::to_string(i) + ".";
  b.tensor(p + "attn_q.weight", {kEmbd, kEmbd}, 0, {});
  b.tensor(p + "ffn_up.weight", {kEmbd, kFf}, 0, {});
}

void split_meta(gguf::Builder& b, std::uint32_t no) {
  b.kv_u32("split.no", no);
  b.kv_u32("split.count", 2);
}

}  // namespace

TEST_CASE("gguf: a split model is read whole from its first shard, and priced as the unsplit file") {
  TempDir dir("gguf-split");
  gguf::Builder whole;
  llama_meta(whole);
  whole.tensor("token_embd.weight", {kEmbd, kVocab}, 0, {});
  block(whole, 0);
  block(whole, 1);
  whole.tensor("output.weight", {kEmbd, kVocab}, 0, {});
  REQUIRE(whole.write(dir / "whole.gguf").ok());

  gguf::Builder one, two;
  llama_meta(one);
  split_meta(one, 0);
  one.tensor("token_embd.weight", {kEmbd, kVocab}, 0, {});
  block(one, 0);
  split_meta(two, 1);
  block(two, 1);
  two.tensor("output.weight", {kEmbd, kVocab}, 0, {});
  REQUIRE(one.write(dir / "m-00001-of-00002.gguf").ok());
  REQUIRE(two.write(dir / "m-00002-of-00002.gguf").ok());

  const auto w = gguf::inspect(dir / "whole.gguf");
  const auto s = gguf::inspect(dir / "m-00001-of-00002.gguf");
  REQUIRE(w.ok());
  REQUIRE(s.ok());
  CHECK(s->tensor_bytes == w->tensor_bytes);
  CHECK(s->layer_bytes == w->layer_bytes);
  CHECK(s->output_bytes == w->output_bytes);
  CHECK(s->layer_bytes.size() == 2);
  CHECK(s->layer_bytes[1] > 0);  // the second shard's block is counted

  SECTION("a missing shard is an error that names it") {
    std::filesystem::remove(dir / "m-00002-of-00002.gguf");
    const auto e = gguf::read_model(dir / "m-00001-of-00002.gguf");
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().code == Errc::bad_model);
    CHECK(e.error().message.find("shard 2 of 2") != std::string::npos);
  }
  SECTION("a shard renamed away from the split naming is refused") {
    std::filesystem::rename(dir / "m-00001-of-00002.gguf", dir / "m.gguf");
    const auto e = gguf::read_model(dir / "m.gguf");
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().message.find("not named NAME-00001-of-") != std::string::npos);
  }
}
