// GGUF writer for tiny, valid llama-architecture models and LoRA adapters (used by tools/ and tests).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::gguf {

struct TinyModelSpec {
  std::string name = "tiny";
  std::uint32_t n_embd = 64;
  std::uint32_t n_layer = 2;
  std::uint32_t n_head = 4;
  std::uint32_t n_head_kv = 2;
  std::uint32_t n_ff = 128;
  std::uint32_t n_ctx_train = 2048;
  std::uint32_t n_vocab = 320;   // >= 256 byte tokens + specials
  std::uint32_t tensor_type = 0; // 0 = F32, 1 = F16
  std::uint64_t seed = 42;
  // Whole strings the tokenizer matches before SentencePiece (USER_DEFINED tokens, longest first):
  // a task vocabulary makes prompts several times shorter, so a tiny model trains much faster.
  std::vector<std::string> user_tokens;
  std::string eos_text;          // non-empty: EOS is this user token (e.g. "<|im_end|>"), not "</s>"
  bool add_bos = true;           // tokenizer.ggml.add_bos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix
  float output_scale = 1.0f;     // output.weight in ±this; training from scratch wants small (0.05)
};

struct TinyLoraSpec {
  std::uint32_t rank = 4;
  float alpha = 8.0f;
  std::vector<std::string> targets = {"attn_q", "attn_v"};  // per-layer tensor kinds
  std::uint64_t seed = 7;
};

// Per-layer weight kinds of LLM_ARCH_LLAMA (also the valid LoRA targets), in file order.
const std::vector<std::string>& layer_kinds();

// Writes a llama model (F32 or F16, seeded random weights) that llama.cpp loads.
Status write_tiny_model(const std::filesystem::path& out, const TinyModelSpec& spec);
// Writes an adapter whose tensors fit the base described by `base`.
Status write_tiny_lora(const std::filesystem::path& out, const TinyModelSpec& base, const TinyLoraSpec& spec);

// The project's stand-in models (`kevlaya-tiny-gguf standins`, the demo, tests, benchmarks):
// kev-tiny (F16), laya-tiny (F32) and two adapters for Kev, written into one folder.
struct StandinFiles {
  std::filesystem::path kev, laya, kev_lora_a, kev_lora_b;
};
Result<StandinFiles> write_standins(const std::filesystem::path& dir);

// The shape of llama2.c's stories260K (n_embd 64, 5 layers, 8 heads, 4 KV heads, FFN 172, vocab 512,
// ctx 2048, F32): the same tensor table and byte counts, with this writer's tokenizer and weights.
// Tests use it as their small real model, so a clone needs no downloaded file.
TinyModelSpec stories_shaped_spec();

// An F16 spec (n_embd 1024) whose file is about `mib` MiB (whole layers; at least one).
TinyModelSpec big_model_spec(std::uint64_t mib, std::uint64_t seed = 42);

}  // namespace kevlaya::gguf
