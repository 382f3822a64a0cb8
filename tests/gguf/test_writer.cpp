// Writer and kevlaya-tiny-gguf output, read back by the reader: keys, shapes, offsets, alignment.
#include <catch2/catch.hpp>
#include <set>

#include "gguf/builder.hpp"
#include "gguf/gguf.hpp"
#include "gguf/writer.hpp"
#include "support/paths.hpp"

namespace gg = kevlaya::gguf;
using kevlaya::test::TempDir;

namespace {

const gg::TensorInfo* tensor(const gg::File& f, const std::string& name) {
  for (const auto& t : f.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::uint64_t> ne_of(const gg::File& f, const std::string& name) {
  const auto* t = tensor(f, name);
  return t ? t->ne : std::vector<std::uint64_t>{};
}

std::uint64_t u(const gg::File& f, const std::string& key) { return f.find(key)->as_uint().value_or(~0ULL); }

}  // namespace

TEST_CASE("writer: tiny model keys and shapes as llama.cpp expects", "[gguf][writer]") {
  TempDir dir("gguf-writer");
  gg::TinyModelSpec s;
  s.name = "unit";
  s.n_embd = 96;
  s.n_layer = 3;
  s.n_head = 6;
  s.n_head_kv = 2;
  s.n_ff = 160;
  s.n_vocab = 300;
  REQUIRE(gg::write_tiny_model(dir / "m.gguf", s).ok());
  auto f = gg::read_file(dir / "m.gguf");
  REQUIRE(f.ok());
  CHECK(f->find("general.architecture")->as_string() == "llama");
  CHECK(f->find("general.name")->as_string() == "unit");
  CHECK(u(*f, "general.file_type") == 0);
  CHECK(u(*f, "llama.embedding_length") == 96);
  CHECK(u(*f, "llama.block_count") == 3);
  CHECK(u(*f, "llama.attention.head_count_kv") == 2);
  CHECK(u(*f, "llama.rope.dimension_count") == 16);
  CHECK(u(*f, "llama.vocab_size") == 300);
  CHECK(f->find("llama.attention.layer_norm_rms_epsilon")->type == gg::ValueType::FLOAT32);
  CHECK(f->find("tokenizer.ggml.model")->as_string() == "llama");
  CHECK(f->find("tokenizer.ggml.tokens")->array_len == 300);
  CHECK(f->find("tokenizer.ggml.scores")->array_len == 300);
  CHECK(f->find("tokenizer.ggml.token_type")->array_len == 300);
  const auto& toks = std::get<std::vector<std::string>>(f->find("tokenizer.ggml.tokens")->v);
  CHECK(toks[0] == "<unk>");
  CHECK(toks[1] == "<s>");
  CHECK(toks[2] == "</s>");
  CHECK(toks[3] == "<0x00>");
  CHECK(toks[3 + 0x3c] == "<0x3C>");  // the last kept element (kArrayKeep = 64)
  CHECK(u(*f, "tokenizer.ggml.bos_token_id") == 1);
  CHECK(u(*f, "tokenizer.ggml.eos_token_id") == 2);
  CHECK(ne_of(*f, "token_embd.weight") == std::vector<std::uint64_t>{96, 300});
  CHECK(ne_of(*f, "output.weight") == std::vector<std::uint64_t>{96, 300});
  CHECK(ne_of(*f, "output_norm.weight") == std::vector<std::uint64_t>{96});
  CHECK(ne_of(*f, "blk.2.attn_q.weight") == std::vector<std::uint64_t>{96, 96});
  CHECK(ne_of(*f, "blk.2.attn_k.weight") == std::vector<std::uint64_t>{96, 32});  // head dim 16 x 2 KV heads
  CHECK(ne_of(*f, "blk.2.attn_v.weight") == std::vector<std::uint64_t>{96, 32});
  CHECK(ne_of(*f, "blk.2.attn_output.weight") == std::vector<std::uint64_t>{96, 96});
  CHECK(ne_of(*f, "blk.2.ffn_gate.weight") == std::vector<std::uint64_t>{96, 160});
  CHECK(ne_of(*f, "blk.2.ffn_up.weight") == std::vector<std::uint64_t>{96, 160});
  CHECK(ne_of(*f, "blk.2.ffn_down.weight") == std::vector<std::uint64_t>{160, 96});
  CHECK(ne_of(*f, "blk.2.attn_norm.weight") == std::vector<std::uint64_t>{96});
  CHECK(ne_of(*f, "blk.2.ffn_norm.weight") == std::vector<std::uint64_t>{96});
  CHECK(f->tensors.size() == 3 + 3 * 9);
}

TEST_CASE("writer: data offsets are packed in order with alignment padding", "[gguf][writer]") {
  TempDir dir("gguf-writer");
  gg::TinyModelSpec s;
  s.n_embd = 40;  // 40 f16 = 80 bytes: not a multiple of 32, so padding is exercised
  s.n_head = 4;
  s.n_ff = 72;
  s.tensor_type = 1;
  REQUIRE(gg::write_tiny_model(dir / "m.gguf", s).ok());
  auto f = gg::read_file(dir / "m.gguf");
  REQUIRE(f.ok());
  CHECK(f->data_offset % 32 == 0);
  std::uint64_t expect = 0;
  for (const auto& t : f->tensors) {
    CHECK(t.offset == expect);
    CHECK(t.type == (t.ne.size() == 1 ? 0u : 1u));  // norms stay F32, matrices F16
    expect += (t.n_bytes() + 31) / 32 * 32;
  }
  CHECK(f->file_size == f->data_offset + expect);
  auto m = gg::model_info(*f);
  REQUIRE(m.ok());
  CHECK(m->quant == "F16");
  CHECK(m->layer_bytes.size() == 2);
  CHECK(m->layer_bytes[0] == m->layer_bytes[1]);
  CHECK(m->other_bytes == 0);
}

TEST_CASE("writer: LoRA adapter shapes fit the base", "[gguf][writer]") {
  TempDir dir("gguf-writer");
  gg::TinyModelSpec base;
  base.n_embd = 64;
  base.n_head = 4;
  base.n_head_kv = 1;
  base.n_ff = 96;
  gg::TinyLoraSpec spec{4, 12.0f, {"attn_k", "ffn_down"}, 3};
  REQUIRE(gg::write_tiny_lora(dir / "a.gguf", base, spec).ok());
  auto f = gg::read_file(dir / "a.gguf");
  REQUIRE(f.ok());
  CHECK(f->find("general.type")->as_string() == "adapter");
  CHECK(f->find("adapter.type")->as_string() == "lora");
  CHECK(f->find("general.architecture")->as_string() == "llama");
  CHECK(f->find("adapter.lora.alpha")->type == gg::ValueType::FLOAT32);
  // W = attn_k {64, 16}: A {64, r}, B {r, 16}. W = ffn_down {96, 64}: A {96, r}, B {r, 64}.
  CHECK(ne_of(*f, "blk.1.attn_k.weight.lora_a") == std::vector<std::uint64_t>{64, 4});
  CHECK(ne_of(*f, "blk.1.attn_k.weight.lora_b") == std::vector<std::uint64_t>{4, 16});
  CHECK(ne_of(*f, "blk.0.ffn_down.weight.lora_a") == std::vector<std::uint64_t>{96, 4});
  CHECK(ne_of(*f, "blk.0.ffn_down.weight.lora_b") == std::vector<std::uint64_t>{4, 64});
  auto m = gg::model_info(*f);
  REQUIRE(m.ok());
  CHECK(m->general_type == "adapter");
  CHECK(m->adapter_type == "lora");
  CHECK(m->lora_alpha == 12.0);
  CHECK(m->lora_rank == 4);
  CHECK(m->lora_targets == std::vector<std::string>{"blk.0.attn_k.weight", "blk.0.ffn_down.weight",
                                                    "blk.1.attn_k.weight", "blk.1.ffn_down.weight"});
}

TEST_CASE("writer: invalid specs are refused", "[gguf][writer]") {
  TempDir dir("gguf-writer");
  gg::TinyModelSpec s;
  s.n_head = 5;  // 64 % 5 != 0
  CHECK(gg::write_tiny_model(dir / "x.gguf", s).error().message == "n_embd must be a multiple of n_head");
  s = {};
  s.n_vocab = 100;
  CHECK(gg::write_tiny_model(dir / "x.gguf", s).error().message == "n_vocab must be at least 260");
  gg::TinyLoraSpec l;
  l.targets = {"attn_x"};
  CHECK(gg::write_tiny_lora(dir / "x.gguf", gg::TinyModelSpec{}, l).error().message.find("unknown LoRA target 'attn_x'") == 0);
  CHECK(gg::write_tiny_model("/nonexistent/dir/x.gguf", gg::TinyModelSpec{}).error().code == kevlaya::Errc::io_error);
}

TEST_CASE("writer: float to half conversion", "[gguf][writer]") {
  CHECK(gg::to_half(0.0f) == 0x0000);
  CHECK(gg::to_half(-0.0f) == 0x8000);
  CHECK(gg::to_half(1.0f) == 0x3c00);
  CHECK(gg::to_half(-2.0f) == 0xc000);
  CHECK(gg::to_half(0.5f) == 0x3800);
  CHECK(gg::to_half(65504.0f) == 0x7bff);
  CHECK(gg::to_half(1e6f) == 0x7c00);
  CHECK(gg::to_half(5.9604645e-8f) == 0x0001);  // smallest subnormal
  CHECK(gg::to_half(1.0f + 1.0f / 2048) == 0x3c00);  // a tie rounds to even (down)...
  CHECK(gg::to_half(1.0f + 3.0f / 2048) == 0x3c02);  // ...or up
}

TEST_CASE("tiny-gguf tool: standins write Kev, Laya and two Kev adapters", "[gguf][writer][tool]") {
  TempDir dir("gguf-tool");
  auto r = kevlaya::test::run_command(kevlaya::test::tiny_gguf_tool().string() + " standins --dir " + dir.path().string());
  REQUIRE(r.exit_code == 0);
  auto kev = gg::inspect(dir / "kev-tiny.gguf");
  auto laya = gg::inspect(dir / "laya-tiny.gguf");
  REQUIRE(kev.ok());
  REQUIRE(laya.ok());
  CHECK(kev->name == "kev-tiny");
  CHECK(laya->name == "laya-tiny");
  CHECK(kev->n_embd == 128);
  CHECK(kev->n_layer == 4);
  CHECK(kev->n_head == 4);
  CHECK(kev->n_head_kv == 2);
  CHECK(kev->n_ff == 256);
  CHECK(laya->n_embd == 64);
  CHECK(laya->n_layer == 2);
  CHECK(kev->quant != laya->quant);
  auto a = gg::inspect(dir / "kev-lora-a.gguf");
  auto b = gg::inspect(dir / "kev-lora-b.gguf");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->lora_targets.size() == 2 * 4);
  CHECK(b->lora_targets.size() == 3 * 4);
  CHECK(kevlaya::test::read_text(dir / "kev-lora-a.gguf") != kevlaya::test::read_text(dir / "kev-lora-b.gguf"));
}

TEST_CASE("tiny-gguf tool: model, lora --base and --big-mib", "[gguf][writer][tool]") {
  TempDir dir("gguf-tool");
  const std::string tool = kevlaya::test::tiny_gguf_tool().string();
  auto r = kevlaya::test::run_command(tool + " model --out " + (dir / "m.gguf").string() +
                                      " --n-embd 32 --n-layer 1 --n-head 2 --n-head-kv 1 --n-ff 48 --f16 --name mm");
  REQUIRE(r.exit_code == 0);
  auto m = gg::inspect(dir / "m.gguf");
  REQUIRE(m.ok());
  CHECK(m->name == "mm");
  CHECK(m->quant == "F16");
  CHECK(m->n_ff == 48);
  r = kevlaya::test::run_command(tool + " lora --out " + (dir / "l.gguf").string() + " --base " +
                                 (dir / "m.gguf").string() + " --rank 2 --targets attn_output");
  REQUIRE(r.exit_code == 0);
  auto f = gg::read_file(dir / "l.gguf");
  REQUIRE(f.ok());
  CHECK(ne_of(*f, "blk.0.attn_output.weight.lora_a") == std::vector<std::uint64_t>{32, 2});
  r = kevlaya::test::run_command(tool + " lora --out " + (dir / "x.gguf").string() + " --targets bogus");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("unknown LoRA target 'bogus'") != std::string::npos);
  // --big-mib picks whole layers: the file is within half a layer (~11 MiB) of the request.
  r = kevlaya::test::run_command(tool + " model --out " + (dir / "big.gguf").string() + " --big-mib 48");
  REQUIRE(r.exit_code == 0);
  const double mib = static_cast<double>(std::filesystem::file_size(dir / "big.gguf")) / (1 << 20);
  CHECK(mib > 48 - 12);
  CHECK(mib < 48 + 12);
  CHECK(gg::inspect(dir / "big.gguf").ok());
}

TEST_CASE("writer: user tokens extend the vocabulary and can be the EOS", "[gguf][writer]") {
  TempDir dir("gguf-writer");
  gg::TinyModelSpec s;
  s.n_vocab = 400;
  s.user_tokens = {"[[end]]", "Situation: ", " retry"};
  s.eos_text = " retry";
  s.add_bos = false;
  s.add_space_prefix = false;
  REQUIRE(gg::write_tiny_model(dir / "m.gguf", s).ok());
  auto f = gg::read_file(dir / "m.gguf");
  REQUIRE(f.ok());
  CHECK(f->find("tokenizer.ggml.eos_token_id")->as_uint() == 3 + 256 + 2);  // after specials, bytes, 2 users
  CHECK(std::get<bool>(f->find("tokenizer.ggml.add_bos_token")->v) == false);
  CHECK(std::get<bool>(f->find("tokenizer.ggml.add_space_prefix")->v) == false);
  CHECK(f->find("tokenizer.ggml.tokens")->array_len == 400);
  s.eos_text = "absent";
  CHECK(gg::write_tiny_model(dir / "x.gguf", s).error().message == "eos_text must be one of the user tokens");
  s.eos_text.clear();
  s.user_tokens.push_back(" retry");
  CHECK(gg::write_tiny_model(dir / "x.gguf", s).error().message == "user tokens must be non-empty and unique");
  s.user_tokens.assign(200, "");
  CHECK(gg::write_tiny_model(dir / "x.gguf", s).error().message.find("n_vocab must be at least 460") == 0);
}
