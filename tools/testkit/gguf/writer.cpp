// Tiny llama-architecture models and LoRA adapters that the real llama.cpp loads. Tensor names and
// ne orders follow src/models/llama.cpp (LLM_ARCH_LLAMA) and src/llama-adapter.cpp at b10470.
#include "gguf/writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "gguf/builder.hpp"
#include "gguf/gguf.hpp"

namespace kevlaya::gguf {
namespace {

constexpr std::uint32_t kFirstByteToken = 3;  // after <unk>, <s>, </s>
constexpr std::uint32_t kMinVocab = kFirstByteToken + 256 + 1;
constexpr float kRmsEps = 1e-5f;
// llama_token_type values (llama.h / gguf convention).
constexpr std::int32_t kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUser = 4, kTokByte = 6;
constexpr float kLoraScale = 0.5f;  // large on purpose: an applied adapter must change outputs

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
};

// <unk>, <s>, </s>, all 256 <0xXX> byte tokens, the spec's user tokens, then printable
// SentencePiece pieces (skipping any a user token already spells).
Vocab make_vocab(std::uint32_t n_vocab, const std::vector<std::string>& user) {
  Vocab v;
  auto add = [&v](std::string t, float score, std::int32_t type) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, kTokUnknown);
  add("<s>", 0, kTokControl);
  add("</s>", 0, kTokControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 0, kTokByte);
  }
  const std::set<std::string> taken(user.begin(), user.end());
  for (const auto& t : user) add(t, 0, kTokUser);
  const std::string space = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary
  std::vector<std::string> pieces{space};
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(space + c);
  for (char c = 0x21; c < 0x7f; ++c) pieces.emplace_back(1, c);
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) pieces.push_back(std::string{a, b});
  }
  for (std::size_t i = 0; v.tokens.size() < n_vocab; ++i) {
    // Past the generated pieces, numbered filler keeps every token unique.
    std::string p = i < pieces.size() ? pieces[i] : "tok" + std::to_string(i);
    if (!taken.count(p)) add(std::move(p), -static_cast<float>(i), kTokNormal);
  }
  return v;
}

std::string blk(std::uint32_t i, const std::string& kind) {
  return "blk." + std::to_string(i) + "." + kind + ".weight";
}

struct Shape {
  std::uint64_t ne0, ne1;
};

// ne of a per-layer weight as LLM_ARCH_LLAMA creates it; {0,0} for an unknown kind.
Shape layer_shape(const TinyModelSpec& s, const std::string& kind) {
  const std::uint64_t e = s.n_embd;
  const std::uint64_t kv = static_cast<std::uint64_t>(s.n_embd / s.n_head) * s.n_head_kv;
  if (kind == "attn_q" || kind == "attn_output") return {e, e};
  if (kind == "attn_k" || kind == "attn_v") return {e, kv};
  if (kind == "ffn_gate" || kind == "ffn_up") return {e, s.n_ff};
  if (kind == "ffn_down") return {s.n_ff, e};
  return {0, 0};
}

Status check_spec(const TinyModelSpec& s) {
  auto bad = [](const std::string& m) { return make_error(Errc::bad_request, m); };
  if (s.n_embd == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.n_layer == 0 || s.n_ff == 0 || s.n_ctx_train == 0) {
    return bad("every dimension must be positive");
  }
  if (s.n_embd % s.n_head != 0) return bad("n_embd must be a multiple of n_head");
  if (s.n_head % s.n_head_kv != 0) return bad("n_head must be a multiple of n_head_kv");
  if ((s.n_embd / s.n_head) % 2 != 0) return bad("the head dimension (n_embd/n_head) must be even for RoPE");
  if (s.n_vocab < kMinVocab) return bad("n_vocab must be at least " + std::to_string(kMinVocab));
  if (s.n_vocab < kMinVocab + s.user_tokens.size())
    return bad("n_vocab must be at least " + std::to_string(kMinVocab + s.user_tokens.size()) + " with " +
               std::to_string(s.user_tokens.size()) + " user tokens");
  std::set<std::string> seen;
  for (const auto& t : s.user_tokens)
    if (t.empty() || !seen.insert(t).second) return bad("user tokens must be non-empty and unique");
  if (!s.eos_text.empty() && !seen.count(s.eos_text)) return bad("eos_text must be one of the user tokens");
  if (s.tensor_type != 0 && s.tensor_type != 1) return bad("tensor_type must be 0 (F32) or 1 (F16)");
  return ok_status();
}

void model_metadata(Builder& b, const TinyModelSpec& s) {
  b.kv_string("general.architecture", "llama");
  b.kv_string("general.name", s.name);
  b.kv_u32("general.file_type", s.tensor_type);  // LLAMA_FTYPE_ALL_F32 = 0, MOSTLY_F16 = 1
  b.kv_u32("general.alignment", 32);
  b.kv_u32("llama.context_length", s.n_ctx_train);
  b.kv_u32("llama.embedding_length", s.n_embd);
  b.kv_u32("llama.block_count", s.n_layer);
  b.kv_u32("llama.feed_forward_length", s.n_ff);
  b.kv_u32("llama.attention.head_count", s.n_head);
  b.kv_u32("llama.attention.head_count_kv", s.n_head_kv);
  b.kv_f32("llama.attention.layer_norm_rms_epsilon", kRmsEps);
  b.kv_u32("llama.rope.dimension_count", s.n_embd / s.n_head);
  b.kv_u32("llama.vocab_size", s.n_vocab);
  const Vocab v = make_vocab(s.n_vocab, s.user_tokens);
  std::uint32_t eos = 2;
  if (!s.eos_text.empty())
    eos = static_cast<std::uint32_t>(std::find(v.tokens.begin(), v.tokens.end(), s.eos_text) - v.tokens.begin());
  b.kv_string("tokenizer.ggml.model", "llama");
  b.kv_strings("tokenizer.ggml.tokens", v.tokens);
  b.kv_f32s("tokenizer.ggml.scores", v.scores);
  b.kv_i32s("tokenizer.ggml.token_type", v.types);
  b.kv_u32("tokenizer.ggml.unknown_token_id", 0);
  b.kv_u32("tokenizer.ggml.bos_token_id", 1);
  b.kv_u32("tokenizer.ggml.eos_token_id", eos);
  b.kv_bool("tokenizer.ggml.add_bos_token", s.add_bos);
  b.kv_bool("tokenizer.ggml.add_space_prefix", s.add_space_prefix);
}

}  // namespace

const std::vector<std::string>& layer_kinds() {
  static const std::vector<std::string> kinds{"attn_q", "attn_k", "attn_v", "attn_output",
                                              "ffn_gate", "ffn_up", "ffn_down"};
  return kinds;
}

Status write_tiny_model(const std::filesystem::path& out, const TinyModelSpec& s) {
  if (auto ok = check_spec(s); !ok) return ok;
  Builder b;
  model_metadata(b, s);
  const std::uint32_t wt = s.tensor_type;
  std::uint64_t seed = s.seed * 1000003;
  // Uniform in ±1/sqrt(fan_in) keeps activations bounded through the layers.
  auto weight = [&](std::uint64_t fan_in) { return Fill{0, 1.0f / std::sqrt(static_cast<float>(fan_in)), ++seed}; };
  const Fill ones{1.0f, 0, 0};  // RMS-norm gains: 1-d tensors stay F32, as llama.cpp expects
  b.tensor("token_embd.weight", {s.n_embd, s.n_vocab}, wt, Fill{0, 1.0f, ++seed});
  b.tensor("output_norm.weight", {s.n_embd}, 0, ones);
  // Logits of normal tokens spread over ±several units while the rows of byte tokens 0x80..0xFF
  // are zero: sampling then never emits a lone high byte, which is invalid UTF-8 and makes
  // llama-server's output parser reject the whole completion.
  const Fill logits{0, s.output_scale, ++seed, s.n_embd, kFirstByteToken + 0x80, kFirstByteToken + 0x100};
  b.tensor("output.weight", {s.n_embd, s.n_vocab}, wt, logits);
  for (std::uint32_t i = 0; i < s.n_layer; ++i) {
    b.tensor(blk(i, "attn_norm"), {s.n_embd}, 0, ones);
    for (const auto& kind : layer_kinds()) {
      if (kind == "ffn_gate") b.tensor(blk(i, "ffn_norm"), {s.n_embd}, 0, ones);
      const Shape sh = layer_shape(s, kind);
      b.tensor(blk(i, kind), {sh.ne0, sh.ne1}, wt, weight(sh.ne0));
    }
  }
  return b.write(out);
}

Status write_tiny_lora(const std::filesystem::path& out, const TinyModelSpec& base, const TinyLoraSpec& spec) {
  if (auto ok = check_spec(base); !ok) return ok;
  if (spec.rank == 0) return make_error(Errc::bad_request, "rank must be positive");
  if (spec.targets.empty()) return make_error(Errc::bad_request, "an adapter needs at least one target");
  std::set<std::string> unique;
  for (const auto& t : spec.targets) {
    if (layer_shape(base, t).ne0 == 0) {
      return make_error(Errc::bad_request, "unknown LoRA target '" + t + "' (use attn_q, attn_k, attn_v, "
                                           "attn_output, ffn_gate, ffn_up, ffn_down)");
    }
    if (!unique.insert(t).second) return make_error(Errc::bad_request, "LoRA target '" + t + "' given twice");
  }
  Builder b;
  b.kv_string("general.architecture", "llama");
  b.kv_string("general.type", "adapter");
  b.kv_string("general.name", base.name + "-lora");
  b.kv_string("adapter.type", "lora");
  b.kv_f32("adapter.lora.alpha", spec.alpha);
  std::uint64_t seed = spec.seed * 7919;
  for (std::uint32_t i = 0; i < base.n_layer; ++i) {
    for (const auto& kind : spec.targets) {
      // llama-adapter.cpp: W.ne0 == A.ne0, W.ne1 == B.ne1, A.ne1 == B.ne0 == rank.
      const Shape w = layer_shape(base, kind);
      const std::string name = blk(i, kind);
      b.tensor(name + ".lora_a", {w.ne0, spec.rank}, 0, Fill{0, kLoraScale, ++seed});
      b.tensor(name + ".lora_b", {spec.rank, w.ne1}, 0, Fill{0, kLoraScale, ++seed});
    }
  }
  return b.write(out);
}

TinyModelSpec stories_shaped_spec() {
  TinyModelSpec s;
  s.name = "stories-shaped";
  s.n_embd = 64;
  s.n_layer = 5;
  s.n_head = 8;
  s.n_head_kv = 4;
  s.n_ff = 172;
  s.n_ctx_train = 2048;
  s.n_vocab = 512;
  s.tensor_type = 0;
  s.seed = 260;
  return s;
}

TinyModelSpec big_model_spec(std::uint64_t mib, std::uint64_t seed) {
  TinyModelSpec s;
  s.name = "big-" + std::to_string(mib) + "mib";
  s.n_embd = 1024;
  s.n_head = 16;
  s.n_head_kv = 4;
  s.n_ff = 2816;
  s.n_vocab = 512;
  s.tensor_type = 1;
  s.seed = seed;
  const std::uint64_t kv = static_cast<std::uint64_t>(s.n_embd / s.n_head) * s.n_head_kv;
  const std::uint64_t per_layer = 2 * (2ull * s.n_embd * s.n_embd + 2ull * s.n_embd * kv + 3ull * s.n_embd * s.n_ff) +
                                  4 * 2ull * s.n_embd;
  const std::uint64_t fixed = 2 * 2ull * s.n_embd * s.n_vocab + 4ull * s.n_embd;
  const std::uint64_t want = mib << 20;
  s.n_layer = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, want > fixed ? (want - fixed + per_layer / 2) / per_layer : 1));
  return s;
}

Result<StandinFiles> write_standins(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(Errc::io_error, "cannot create " + dir.string() + ": " + ec.message());
  TinyModelSpec kev;
  kev.name = "kev-tiny";
  kev.n_embd = 128;
  kev.n_layer = 4;
  kev.n_head = 4;
  kev.n_head_kv = 2;
  kev.n_ff = 256;
  kev.n_ctx_train = 4096;
  kev.n_vocab = 384;
  kev.tensor_type = 1;  // F16
  kev.seed = 1;
  TinyModelSpec laya;
  laya.name = "laya-tiny";
  laya.n_embd = 64;
  laya.n_layer = 2;
  laya.n_head = 4;
  laya.n_head_kv = 2;
  laya.n_ff = 128;
  laya.n_ctx_train = 2048;
  laya.n_vocab = 320;
  laya.seed = 2;
  const TinyLoraSpec a{8, 16.0f, {"attn_q", "attn_v"}, 101};
  const TinyLoraSpec b{8, 16.0f, {"attn_q", "attn_v", "ffn_up"}, 202};
  StandinFiles f{dir / "kev-tiny.gguf", dir / "laya-tiny.gguf", dir / "kev-lora-a.gguf", dir / "kev-lora-b.gguf"};
  for (auto st : {write_tiny_model(f.kev, kev), write_tiny_model(f.laya, laya), write_tiny_lora(f.kev_lora_a, kev, a),
                  write_tiny_lora(f.kev_lora_b, kev, b)})
    if (!st) return st.error();
  return f;
}

}  // namespace kevlaya::gguf
