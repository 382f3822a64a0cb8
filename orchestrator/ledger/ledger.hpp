// VRAM ledger: what one llama-server child costs, line by line, from GGUF metadata and the
// flags that change memory. Pure functions; formulas and their llama.cpp sources: docs/ledger.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "gguf/gguf.hpp"

namespace kevlaya::ledger {

inline constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;

// The llama-server flags that change memory, with llama-server's defaults.
struct Flags {
  int ngl = -1;         // -1 = all (n_layer + 1, the output layer counts as one)
  int ctx = 2048;       // 0 = n_ctx_train
  int parallel = 1;     // <= 0 = auto (4 slots, unified KV), as tools/server/server.cpp
  int n_batch = 2048;   // -b
  int n_ubatch = 512;   // -ub
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool flash_attn = true;   // "auto" enables it wherever the backend supports it
  bool kv_unified = false;  // -kvu; llama-server's default with an explicit -np
};

// Flags a profile's child runs with, read from its argv (extra_args win over the profile keys).
Flags flags_from_profile(const config::Profile& p);
// Stable text of the flags, used as part of a calibration key ("ngl=32 c=2048 ...").
std::string flags_key(const Flags& f);

// Which layers llama.cpp puts on the GPU (llama_model_base::load_tensors, b10470): the LAST
// `ngl` of the n_layer+1 "layers", where layer n_layer is the output layer.
struct Offload {
  std::uint32_t repeating_gpu = 0;  // blocks on the GPU: [n_layer - repeating_gpu, n_layer)
  bool output_gpu = false;          // output.weight + output_norm on the GPU
  std::uint32_t reported = 0;       // N of "offloaded N/M layers to GPU"
  std::uint32_t total = 0;          // M: n_layer + 1
};
Offload offload_split(std::uint32_t n_layer, int ngl);

// KV cells after llama_context's padding and the per-slot split (llama-context.cpp).
struct KvShape {
  std::uint32_t n_ctx = 0;      // total cells (padded to 256, rounded to slots)
  std::uint32_t n_ctx_seq = 0;  // cells one slot may use
  std::uint32_t n_stream = 1;   // 1 when unified, else one stream per slot
  std::uint32_t kv_size = 0;    // cells per stream
};
KvShape kv_shape(std::uint32_t ctx, int parallel, bool unified);

// One line per kind of memory; bytes. "gpu" is the accelerator, "cpu" is host RAM.
struct Bill {
  std::uint64_t weights_gpu = 0, weights_cpu = 0;
  std::uint64_t kv_gpu = 0, kv_cpu = 0;
  std::uint64_t compute_gpu = 0, compute_cpu = 0;
  std::uint64_t overhead_gpu = 0;
  std::uint64_t adapters_gpu = 0;
  std::uint64_t declared_gpu = 0;  // backend=command: the profile's vram_mib (nothing else is known)
  Offload offload;
  KvShape kv;
  std::uint64_t total_gpu() const;  // what the GPU budget must hold
};

// Memory a running child reported in its log (see calibration.hpp); nullopt = line not seen.
struct Measured {
  std::optional<std::uint32_t> layers_offloaded, layers_total;
  std::optional<std::uint64_t> weights_gpu, weights_cpu;
  std::optional<std::uint64_t> kv_gpu, kv_cpu;
  std::optional<std::uint64_t> compute_gpu, compute_cpu;
  std::optional<std::uint64_t> adapters_gpu, adapters_cpu;
  bool empty() const;
};

struct AdapterInput {
  std::string name;          // file stem or configured name
  std::string path;          // as given to --lora
  std::uint64_t bytes = 0;   // ModelInfo::tensor_bytes of the adapter
  double scale = 1.0;
};

// Everything the ledger needs about one profile.
struct ProfileInput {
  std::string name;
  gguf::ModelInfo model;
  bool output_tied = false;  // no output.weight: llama.cpp duplicates token_embd into the output layer
  Flags flags;
  std::vector<AdapterInput> adapters;
  std::optional<bool> shared_base;      // false = opted out of shared-base grouping
  std::string share_key;                // flags that must match to share a child (see plan.cpp)
  std::optional<Measured> measured;     // calibration for exactly these flags
  std::optional<std::uint64_t> declared_gpu;  // backend=command: vram_mib in bytes, the whole bill
  std::vector<int> gpu;                 // the profile's `gpu:` devices; empty = auto
  bool pin = false;                     // kept resident: a member of every allowed set
};

// The estimate for a model with flags and adapters; `overhead` is gpu.overhead_mib in bytes.
Bill estimate(const gguf::ModelInfo& m, bool output_tied, const Flags& f,
              const std::vector<AdapterInput>& adapters, std::uint64_t overhead);
// The estimate with every line the measurement has replaced by the measured value.
Bill apply_measured(Bill b, const Measured& m);

// Pieces of the estimate, exposed for tests and docs.
std::uint64_t compute_estimate(const gguf::ModelInfo& m, const Flags& f, const KvShape& kv);

// True when `output.weight` is absent (tied embeddings); from the tensor list.
bool output_is_tied(const gguf::File& f);

// Checks a LoRA adapter against its base like llama_adapter_lora_init_impl does: architecture,
// adapter.type, every target tensor present with matching shapes. Error names the tensor.
Status check_adapter(const gguf::File& base, const gguf::File& adapter, const std::string& adapter_name);

std::string format_mib(std::uint64_t bytes);  // "256.00"

}  // namespace kevlaya::ledger
