// The per-child bill. Every formula cites the llama.cpp b10470 code it reproduces; see docs/ledger.md.
#include "ledger/ledger.hpp"

#include "config/backend.hpp"
#include "config/fingerprint.hpp"
#include "config/flags.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kevlaya::ledger {
namespace {

constexpr std::uint32_t kCtxPad = 256;  // GGML_PAD(n_ctx, 256) in llama_context's constructor
constexpr int kAutoSlots = 4;           // server.cpp: n_parallel auto -> 4 slots, unified KV
constexpr std::uint64_t kF32 = 4, kF16 = 2;

std::uint32_t pad(std::uint32_t n, std::uint32_t to) { return (n + to - 1) / to * to; }

std::uint32_t cache_type(const std::string& name) {
  // An unknown name fails later in config/check; price it as f16 meanwhile.
  return gguf::cache_type_from_name(name).value_or(static_cast<std::uint32_t>(gguf::GgmlType::F16));
}

int int_or(const std::optional<std::string>& v, int fallback) {
  if (!v) return fallback;
  try {
    return std::stoi(*v);
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

std::uint64_t Bill::total_gpu() const {
  return weights_gpu + kv_gpu + compute_gpu + overhead_gpu + adapters_gpu + declared_gpu;
}

bool Measured::empty() const {
  return !layers_offloaded && !weights_gpu && !weights_cpu && !kv_gpu && !kv_cpu && !compute_gpu &&
         !compute_cpu && !adapters_gpu && !adapters_cpu;
}

namespace {

// One priced flag as the child reads it ("all" layers is -1, as the profile writes it).
void read_flag(Flags& f, std::string_view key, const std::optional<std::string>& v) {
  if (key == "ngl") f.ngl = v && (*v == "all" || *v == "auto") ? -1 : int_or(v, f.ngl);
  if (key == "ctx") f.ctx = int_or(v, f.ctx);
  if (key == "parallel") f.parallel = int_or(v, f.parallel);
  if (key == "batch") f.n_batch = int_or(v, f.n_batch);
  if (key == "ubatch") f.n_ubatch = int_or(v, f.n_ubatch);
  if (key == "cache_type_k" && v) f.cache_type_k = *v;
  if (key == "cache_type_v" && v) f.cache_type_v = *v;
  if (key == "kv_unified") f.kv_unified = true;
  if (key == "no_kv_unified") f.kv_unified = false;
  if (key == "flash_attn" && v) f.flash_attn = *v != "off";
}

}  // namespace

Flags flags_from_profile(const config::Profile& p) {
  Flags f;
  f.ngl = p.ngl;
  f.ctx = p.ctx;
  f.parallel = p.parallel;
  if (p.batch > 0) f.n_batch = p.batch;
  if (!p.cache_type_k.empty()) f.cache_type_k = p.cache_type_k;
  if (!p.cache_type_v.empty()) f.cache_type_v = p.cache_type_v;
  if (p.flash_attn) f.flash_attn = *p.flash_attn;
  // Priced as it runs: the child's argv in order (profile flags, then extra_args), the last value of
  // a flag winning as in llama-server, so `extra_args: [-c, 8192]` is priced at 8192.
  if (config::backend_of(p).llama_server) {
    const auto argv = config::child_argv(p);  // the argv config::fingerprint reads too
    const std::vector<std::string> args(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
    for (const auto& use : config::scan_flags(args)) read_flag(f, use.flag->key, use.value);
  }
  if (f.parallel <= 0) {
    f.parallel = kAutoSlots;
    f.kv_unified = true;
  }
  return f;
}

std::string flags_key(const Flags& f) {
  return "ngl=" + std::to_string(f.ngl) + " c=" + std::to_string(f.ctx) + " np=" + std::to_string(f.parallel) +
         " b=" + std::to_string(f.n_batch) + " ub=" + std::to_string(f.n_ubatch) + " ctk=" + f.cache_type_k +
         " ctv=" + f.cache_type_v + " fa=" + (f.flash_attn ? "1" : "0") + " kvu=" + (f.kv_unified ? "1" : "0");
}

Offload offload_split(std::uint32_t n_layer, int ngl) {
  // n_gpu_layers(): negative = n_layer + 1. i_gpu_start = max(n_layer + 1 - ngl, 0) and layer
  // il (0..n_layer, n_layer = output) is on the GPU when il >= i_gpu_start.
  const std::uint64_t all = std::uint64_t{n_layer} + 1;
  const std::uint64_t n = ngl < 0 ? all : std::min<std::uint64_t>(static_cast<std::uint64_t>(ngl), all);
  Offload o;
  o.output_gpu = n >= 1;
  o.repeating_gpu = n >= 1 ? static_cast<std::uint32_t>(n - 1) : 0;
  o.reported = static_cast<std::uint32_t>(n);
  o.total = static_cast<std::uint32_t>(all);
  return o;
}

KvShape kv_shape(std::uint32_t ctx, int parallel, bool unified) {
  KvShape s;
  const auto seqs = static_cast<std::uint32_t>(std::max(parallel, 1));
  s.n_ctx = pad(ctx, kCtxPad);
  if (unified) {
    s.n_ctx_seq = s.n_ctx;
  } else {
    s.n_ctx_seq = pad(s.n_ctx / seqs, kCtxPad);
    s.n_ctx = s.n_ctx_seq * seqs;
  }
  s.n_stream = unified ? 1 : seqs;
  s.kv_size = s.n_ctx_seq;  // llama_model::create_memory passes n_ctx_seq as the cells per stream
  return s;
}

static std::uint64_t kv_bytes_per_layer(const gguf::ModelInfo& m, const Flags& f, const KvShape& kv) {
  // llama_kv_cache: K [n_embd_k_gqa, kv_size, n_stream] of type_k, V likewise of type_v.
  const std::uint64_t cells = std::uint64_t{kv.kv_size} * kv.n_stream;
  const std::uint64_t k = gguf::row_size(cache_type(f.cache_type_k), std::uint64_t{m.head_dim_k} * m.n_head_kv);
  const std::uint64_t v = gguf::row_size(cache_type(f.cache_type_v), std::uint64_t{m.head_dim_v} * m.n_head_kv);
  return (k + v) * cells;
}

std::uint64_t compute_estimate(const gguf::ModelInfo& m, const Flags& f, const KvShape& kv) {
  // llama_context::sched_reserve reserves a prompt graph of n_ubatch tokens with n_parallel
  // outputs; ggml-alloc reuses memory, so the buffer is the widest phase, not the sum.
  const std::uint64_t n_batch = std::min<std::uint64_t>(kv.n_ctx, static_cast<std::uint64_t>(std::max(f.n_batch, 1)));
  const std::uint64_t ub = std::min<std::uint64_t>(n_batch, static_cast<std::uint64_t>(std::max(f.n_ubatch, 1)));
  const std::uint64_t n_kv = kv.kv_size;  // per stream; the ubatch is split across streams
  const std::uint64_t embd = m.n_embd, ff = m.n_ff;
  const std::uint64_t outputs = std::min<std::uint64_t>(ub, static_cast<std::uint64_t>(std::max(f.parallel, 1)));
  const std::uint64_t attn = f.flash_attn
                                 ? kF16 * ub * n_kv + kF32 * ub * 6 * embd  // f16 mask; x, q, k, v, casts, out
                                 : kF32 * ub * n_kv * (std::uint64_t{m.n_head} + 1) + kF32 * ub * 4 * embd;
  const std::uint64_t ffn = kF32 * ub * (2 * ff + 2 * embd);
  const std::uint64_t out = kF32 * outputs * m.n_vocab + kF32 * ub * embd;
  return std::max({attn, ffn, out});
}

Bill estimate(const gguf::ModelInfo& m, bool output_tied, const Flags& f,
              const std::vector<AdapterInput>& adapters, std::uint64_t overhead) {
  Bill b;
  b.offload = offload_split(m.n_layer, f.ngl);
  const std::uint32_t first_gpu = m.n_layer - b.offload.repeating_gpu;
  for (std::uint32_t il = 0; il < m.n_layer && il < m.layer_bytes.size(); ++il)
    (il >= first_gpu ? b.weights_gpu : b.weights_cpu) += m.layer_bytes[il];
  (b.offload.output_gpu ? b.weights_gpu : b.weights_cpu) += m.output_bytes;
  // The input layer always stays on the CPU; a tied output duplicates token_embd onto the
  // output layer's device (create_tensor with TENSOR_DUPLICATED).
  b.weights_cpu += m.token_embd_bytes + m.other_bytes;
  if (output_tied) (b.offload.output_gpu ? b.weights_gpu : b.weights_cpu) += m.token_embd_bytes;

  const auto ctx = static_cast<std::uint32_t>(f.ctx > 0 ? f.ctx : static_cast<int>(m.n_ctx_train));
  b.kv = kv_shape(ctx, f.parallel, f.kv_unified);
  const std::uint64_t per_layer = kv_bytes_per_layer(m, f, b.kv);
  b.kv_gpu = per_layer * b.offload.repeating_gpu;  // KV lives on its layer's device (offload_kqv)
  b.kv_cpu = per_layer * (m.n_layer - b.offload.repeating_gpu);

  // Conservative: even at ngl 0 a CUDA build reserves a GPU compute buffer (op_offload).
  const std::uint64_t compute = compute_estimate(m, f, b.kv);
  b.compute_gpu = compute;
  const std::uint64_t ub = std::min<std::uint64_t>(b.kv.n_ctx, static_cast<std::uint64_t>(std::max(f.n_ubatch, 1)));
  b.compute_cpu = b.offload.repeating_gpu < m.n_layer ? compute : kF32 * ub * m.n_embd;  // host: input embeddings
  b.overhead_gpu = overhead;
  for (const auto& a : adapters) b.adapters_gpu += a.bytes;
  return b;
}

Bill apply_measured(Bill b, const Measured& m) {
  if (m.weights_gpu) b.weights_gpu = *m.weights_gpu;
  if (m.weights_cpu) b.weights_cpu = *m.weights_cpu;
  if (m.kv_gpu || m.kv_cpu) {
    b.kv_gpu = m.kv_gpu.value_or(0);
    b.kv_cpu = m.kv_cpu.value_or(0);
  }
  if (m.compute_gpu) b.compute_gpu = *m.compute_gpu;
  if (m.compute_cpu) b.compute_cpu = *m.compute_cpu;
  if (m.adapters_gpu) b.adapters_gpu = *m.adapters_gpu;
  return b;
}

bool output_is_tied(const gguf::File& f) {
  return std::none_of(f.tensors.begin(), f.tensors.end(),
                      [](const gguf::TensorInfo& t) { return t.name == "output.weight"; });
}

std::string format_mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return buf;
}

}  // namespace kevlaya::ledger
