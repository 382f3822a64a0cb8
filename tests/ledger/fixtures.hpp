// Metadata-only ModelInfo fixtures for ledger tests: built by hand, no GGUF file needed.
#pragma once
#include "gguf/gguf.hpp"
#include "ledger/ledger.hpp"

namespace kevlaya::test {

// A llama-server profile on `model`: every layer offloaded, ctx 2048.
inline config::Profile member(const std::string& name, const std::filesystem::path& model) {
  config::Profile p;
  p.name = name;
  p.model = model;
  p.ngl = -1;
  p.ctx = 2048;
  return p;
}

inline std::uint64_t rows(gguf::GgmlType t, std::uint64_t n_per_row, std::uint64_t n_rows) {
  return gguf::row_size(static_cast<std::uint32_t>(t), n_per_row) * n_rows;
}

// stories260K.gguf as its header says: llama, n_embd 64, 5 layers, 8 heads, 4 KV heads,
// head dim 8, FFN 172, vocab 512, every tensor F32.
inline gguf::ModelInfo stories260k_info() {
  gguf::ModelInfo m;
  m.path = "/models/stories260K.gguf";
  m.architecture = "llama";
  m.n_layer = 5;
  m.n_embd = 64;
  m.n_head = 8;
  m.n_head_kv = 4;
  m.head_dim_k = m.head_dim_v = 8;
  m.n_ff = 172;
  m.n_vocab = 512;
  m.n_ctx_train = 2048;
  // q 64x64, k 64x32, v 64x32, o 64x64, gate/up/down 64x172, two norms of 64, all f32
  const std::uint64_t layer = 4 * (64 * 64 + 64 * 32 + 64 * 32 + 64 * 64 + 3 * 64 * 172 + 2 * 64);
  m.layer_bytes.assign(5, layer);
  m.token_embd_bytes = 4 * 64 * 512;
  m.output_bytes = 4 * 64 * 512 + 4 * 64;
  m.tensor_bytes = 5 * layer + m.token_embd_bytes + m.output_bytes;
  return m;
}

// Shaped like a Mistral-7B Q4_K_S: 32 layers, 32 heads, 8 KV heads of 128, FFN 14336.
inline gguf::ModelInfo q4ks_7b_info(const char* path = "/models/kev-7b.Q4_K_S.gguf") {
  using T = gguf::GgmlType;
  gguf::ModelInfo m;
  m.path = path;
  m.architecture = "llama";
  m.n_layer = 32;
  m.n_embd = 4096;
  m.n_head = 32;
  m.n_head_kv = 8;
  m.head_dim_k = m.head_dim_v = 128;
  m.n_ff = 14336;
  m.n_vocab = 32000;
  m.n_ctx_train = 32768;
  const std::uint64_t attn = rows(T::Q4_K, 4096, 4096) * 2 + rows(T::Q4_K, 4096, 1024) * 2;
  const std::uint64_t ffn = rows(T::Q4_K, 4096, 14336) * 2 + rows(T::Q5_K, 14336, 4096);
  m.layer_bytes.assign(32, attn + ffn + 2 * 4 * 4096);
  m.token_embd_bytes = rows(T::Q4_K, 4096, 32000);
  m.output_bytes = rows(T::Q6_K, 4096, 32000) + 4 * 4096;
  m.tensor_bytes = 32 * m.layer_bytes[0] + m.token_embd_bytes + m.output_bytes;
  return m;
}

// Shaped like a Llama-3.2-3B Q4_K_S: 28 layers, 24 heads, 8 KV heads of 128, tied output.
inline gguf::ModelInfo q4ks_3b_info() {
  using T = gguf::GgmlType;
  gguf::ModelInfo m;
  m.path = "/models/laya-3b.Q4_K_S.gguf";
  m.architecture = "llama";
  m.n_layer = 28;
  m.n_embd = 3072;
  m.n_head = 24;
  m.n_head_kv = 8;
  m.head_dim_k = m.head_dim_v = 128;
  m.n_ff = 8192;
  m.n_vocab = 128256;
  m.n_ctx_train = 131072;
  const std::uint64_t attn = rows(T::Q4_K, 3072, 3072) * 2 + rows(T::Q4_K, 3072, 1024) * 2;
  const std::uint64_t ffn = rows(T::Q4_K, 3072, 8192) * 2 + rows(T::Q4_K, 8192, 3072);
  m.layer_bytes.assign(28, attn + ffn + 2 * 4 * 3072);
  m.token_embd_bytes = rows(T::Q6_K, 3072, 128256);
  m.output_bytes = 4 * 3072;  // output_norm only: output.weight is tied to token_embd
  m.tensor_bytes = 28 * m.layer_bytes[0] + m.token_embd_bytes + m.output_bytes;
  return m;
}

inline gguf::ModelInfo adapter_info(const char* path, std::uint64_t bytes) {
  gguf::ModelInfo m;
  m.path = path;
  m.general_type = "adapter";
  m.adapter_type = "lora";
  m.tensor_bytes = bytes;
  return m;
}

// The reference profiles' bills (profiles/kev.yaml: 7B Q4_K_S, ngl 32, ctx 2048; profiles/laya.yaml:
// 3B Q4_K_S with tied output, ctx 4096).
inline ledger::ProfileInput reference_kev() {
  ledger::ProfileInput p;
  p.name = "kev";
  p.model = q4ks_7b_info();
  p.flags.ngl = 32;
  p.flags.ctx = 2048;
  return p;
}

inline ledger::ProfileInput reference_laya() {
  ledger::ProfileInput p;
  p.name = "laya";
  p.model = q4ks_3b_info();
  p.output_tied = true;
  p.flags.ctx = 4096;
  return p;
}

}  // namespace kevlaya::test
