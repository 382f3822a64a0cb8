#include "model_load.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log.hpp"

namespace standin {
namespace {

using kevlaya::gguf::ModelInfo;
constexpr double kMiB = 1024.0 * 1024.0;

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / kMiB; }

std::uint32_t pad256(std::uint64_t n) { return static_cast<std::uint32_t>((n + 255) / 256 * 256); }

// The chain llama.cpp prints when llama_model_load fails, up to (not including) the exit lines.
void print_model_load_error(const std::string& path, const std::string& what) {
  logf(Level::error, "llama_model_load: error loading model: %s", what.c_str());
  logf(Level::error, "llama_model_load_from_file_impl: failed to load model");
  logf(Level::error, "cmn  %s: failed to load model '%s'", fn12("common_init_from_params").c_str(), path.c_str());
  logf(Level::error, "srv  %s: failed to load model, '%s'", fn12("load_model").c_str(), path.c_str());
}

void print_cuda_alloc_failure(std::uint64_t bytes) {
  logf(Level::error,
       "ggml_backend_cuda_buffer_type_alloc_buffer: allocating %.2f MiB on device 0: cudaMalloc failed: out of memory",
       mib(bytes));
  logf(Level::error, "alloc_tensor_range: failed to allocate CUDA0 buffer of size %llu",
       static_cast<unsigned long long>(bytes));
}

int gpu_layers(const Options& opt, const ModelInfo& m) {
  const int all = static_cast<int>(m.n_layer) + 1;
  return opt.n_gpu_layers < 0 ? all : std::min(opt.n_gpu_layers, all);
}

struct Split {
  std::uint64_t gpu = 0;
  std::uint64_t cpu = 0;
  int gpu_repeating = 0;  // offloaded blocks
};

// Like llama.cpp: the last `ngl - 1` blocks plus the output layer go to the GPU when ngl > n_layer;
// with ngl <= n_layer the last ngl blocks go; token_embd always stays on the CPU.
Split model_split(const ModelInfo& m, int ngl) {
  Split s;
  const int n_layer = static_cast<int>(m.n_layer);
  const bool output_on_gpu = ngl > n_layer;
  s.gpu_repeating = std::min(ngl, n_layer);
  for (int il = 0; il < static_cast<int>(m.layer_bytes.size()); il++) {
    (il >= n_layer - s.gpu_repeating ? s.gpu : s.cpu) += m.layer_bytes[static_cast<size_t>(il)];
  }
  (output_on_gpu ? s.gpu : s.cpu) += m.output_bytes;
  s.cpu += m.token_embd_bytes + m.other_bytes;
  return s;
}

void print_tensor_lines(const ModelInfo& m, int ngl, const Split& s) {
  logf(Level::trace, "load_tensors: loading model tensors, this can take a while... (load_mode = mmap)");
  if (ngl > static_cast<int>(m.n_layer)) logf(Level::trace, "load_tensors: offloading output layer to GPU");
  logf(Level::trace, "load_tensors: offloading %d repeating layers to GPU", s.gpu_repeating);
  logf(Level::trace, "load_tensors: offloaded %d/%u layers to GPU", ngl, m.n_layer + 1);
  logf(Level::trace, "load_tensors: %12s model buffer size = %8.2f MiB", "CPU_Mapped", mib(s.cpu));
  if (s.gpu > 0) logf(Level::trace, "load_tensors: %12s model buffer size = %8.2f MiB", "CUDA0", mib(s.gpu));
}

std::uint64_t cache_row(const std::string& type, std::uint64_t n) {
  const auto t = kevlaya::gguf::cache_type_from_name(type);
  return t ? kevlaya::gguf::row_size(*t, n) : n * 2;
}

struct Kv {
  std::uint64_t k_gpu = 0, v_gpu = 0, k_cpu = 0, v_cpu = 0;
  std::uint64_t gpu() const { return k_gpu + v_gpu; }
  std::uint64_t cpu() const { return k_cpu + v_cpu; }
};

// n_layer x n_ctx x (n_embd_k_gqa + n_embd_v_gqa) x bytes of the cache type, split by layer placement.
Kv kv_bytes(const Options& opt, const ModelInfo& m, std::uint32_t n_ctx, const Split& s) {
  const std::uint64_t k_row = cache_row(opt.cache_type_k, std::uint64_t{m.head_dim_k} * m.n_head_kv);
  const std::uint64_t v_row = cache_row(opt.cache_type_v, std::uint64_t{m.head_dim_v} * m.n_head_kv);
  Kv kv;
  for (int il = 0; il < static_cast<int>(m.n_layer); il++) {
    const bool gpu = il >= static_cast<int>(m.n_layer) - s.gpu_repeating;
    (gpu ? kv.k_gpu : kv.k_cpu) += k_row * n_ctx;
    (gpu ? kv.v_gpu : kv.v_cpu) += v_row * n_ctx;
  }
  return kv;
}

void print_context_lines(const Options& opt, const ModelInfo& m, const LoadedModel& lm, const Kv& kv, bool on_gpu) {
  const bool unified = opt.n_parallel < 0;
  logf(Level::trace, "llama_context: constructing llama_context");
  logf(Level::trace, "llama_context: n_seq_max             = %d", lm.n_slots);
  logf(Level::trace, "llama_context: n_ctx                 = %u", lm.n_ctx);
  logf(Level::trace, "llama_context: n_ctx_seq             = %u", unified ? lm.n_ctx : lm.n_ctx / lm.n_slots);
  logf(Level::trace, "llama_context: n_batch               = %d", std::min<int>(opt.n_batch, static_cast<int>(lm.n_ctx)));
  logf(Level::trace, "llama_context: n_ubatch              = %d", opt.n_ubatch);
  logf(Level::trace, "llama_context: flash_attn            = %s", opt.flash_attn.c_str());
  logf(Level::trace, "llama_context: kv_unified            = %s", unified ? "true" : "false");
  const char* host = on_gpu ? "CUDA_Host" : "CPU";
  logf(Level::trace, "llama_context: %10s  output buffer size = %8.2f MiB", host,
       mib(std::uint64_t{m.n_vocab} * 4 * static_cast<std::uint64_t>(lm.n_slots)));
  if (kv.gpu() > 0) logf(Level::trace, "llama_kv_cache: %10s KV buffer size = %8.2f MiB", "CUDA0", mib(kv.gpu()));
  if (kv.cpu() > 0) logf(Level::trace, "llama_kv_cache: %10s KV buffer size = %8.2f MiB", "CPU", mib(kv.cpu()));
  logf(Level::trace, "llama_kv_cache: size = %7.2f MiB (%6u cells, %3u layers, %2d/%d seqs), K (%s): %7.2f MiB, V (%s): %7.2f MiB",
       mib(kv.gpu() + kv.cpu()), lm.n_ctx, m.n_layer, lm.n_slots, unified ? 1 : lm.n_slots, opt.cache_type_k.c_str(),
       mib(kv.k_gpu + kv.k_cpu), opt.cache_type_v.c_str(), mib(kv.v_gpu + kv.v_cpu));
}

// A documented approximation (llama.cpp measures the graph): logits + activations of one ubatch.
void print_compute_lines(const Options& opt, const ModelInfo& m, bool on_gpu) {
  const std::uint64_t ub = static_cast<std::uint64_t>(std::max(1, opt.n_ubatch));
  const std::uint64_t main_bytes = ub * 4 * (std::uint64_t{m.n_vocab} + 4ull * m.n_embd + 2ull * m.n_ff);
  logf(Level::trace, "sched_reserve: reserving ...");
  logf(Level::trace, "sched_reserve: %10s compute buffer size = %8.2f MiB", on_gpu ? "CUDA0" : "CPU", mib(main_bytes));
  if (on_gpu) {
    logf(Level::trace, "sched_reserve: %10s compute buffer size = %8.2f MiB", "CUDA_Host", mib(ub * m.n_embd * 4 * 2));
  }
}

// Loads the adapters (metadata only). false after printing the failure chain.
bool load_adapters(const Options& opt, const ModelInfo& m, bool on_gpu, std::vector<Adapter>& out) {
  for (const auto& spec : opt.loras) {
    logf(Level::trace, "llama_adapter_lora_init_impl: loading lora adapter from '%s' ...", spec.path.c_str());
    auto a = kevlaya::gguf::inspect(spec.path);
    std::string err;
    if (!a) err = "failed to load lora adapter file from " + spec.path;
    else if (a->general_type != "adapter") err = "expect general.type to be 'adapter', but got: " + a->general_type;
    if (!err.empty()) {
      logf(Level::error, "llama_adapter_lora_init: failed to apply lora adapter: %s", err.c_str());
      logf(Level::error, "cmn  %s: failed to load lora adapter '%s'", fn12("common_init_result").c_str(), spec.path.c_str());
      logf(Level::error, "cmn  %s: failed to load model '%s'", fn12("common_init_from_params").c_str(), m.path.c_str());
      logf(Level::error, "srv  %s: failed to load model, '%s'", fn12("load_model").c_str(), m.path.c_str());
      return false;
    }
    logf(Level::trace, "llama_adapter_lora_init_impl: %10s LoRA buffer size = %8.2f MiB", on_gpu ? "CUDA0" : "CPU",
         mib(a->tensor_bytes));
    logf(Level::trace, "llama_adapter_lora_init_impl: loaded %zu tensors from lora file", a->lora_targets.size() * 2);
    out.push_back({spec.path, opt.lora_init_without_apply ? 0.0f : spec.scale});
  }
  return true;
}

}  // namespace

std::optional<kevlaya::gguf::ModelInfo> read_model(const Options& opt) {
  logf(Level::info, "srv  %s: loading model '%s'", fn12("load_model").c_str(), opt.model_path.c_str());
  logf(Level::trace, "srv  %s: local path '%s'", fn12("load_model").c_str(), opt.model_path.c_str());
  auto file = kevlaya::gguf::read_file(opt.model_path);
  auto info = file ? kevlaya::gguf::model_info(*file, opt.model_path)
                   : kevlaya::Result<kevlaya::gguf::ModelInfo>(file.error());
  if (!info) {
    if (::access(opt.model_path.c_str(), R_OK) != 0) {
      logf(Level::error, "gguf_init_from_file: failed to open GGUF file '%s' (%s)", opt.model_path.c_str(),
           std::strerror(errno));
    } else {
      logf(Level::error, "gguf_init_from_file_impl: %s", info.error().message.c_str());
    }
    print_model_load_error(opt.model_path, "llama_model_loader: failed to load model from " + opt.model_path);
    return std::nullopt;
  }
  logf(Level::trace, "llama_model_loader: loaded meta data with %zu key-value pairs and %zu tensors from %s (version GGUF V%u)",
       file->kv.size(), file->tensors.size(), opt.model_path.c_str(), file->version);
  return std::move(info).value();
}

int default_load_ms(std::uint64_t file_size) {
  return std::max(5, static_cast<int>(file_size / (1024 * 1024)));
}

std::optional<LoadedModel> finish_load(const Options& opt, const ModelInfo& m) {
  const int ngl = gpu_layers(opt, m);
  const bool on_gpu = ngl > 0;
  const Split split = model_split(m, ngl);
  print_tensor_lines(m, ngl, split);
  if (opt.fake_cuda_oom) {
    print_cuda_alloc_failure(std::max<std::uint64_t>(split.gpu, 1));
    print_model_load_error(opt.model_path, "unable to allocate CUDA0 buffer");
    return std::nullopt;
  }

  LoadedModel lm;
  lm.info = m;
  const bool unified = opt.n_parallel < 0;
  lm.n_slots = unified ? 4 : opt.n_parallel;
  const std::uint32_t want = opt.n_ctx > 0 ? static_cast<std::uint32_t>(opt.n_ctx) : std::max(m.n_ctx_train, 256u);
  lm.n_ctx = pad256(want);
  std::uint32_t seq = lm.n_ctx;
  if (!unified) {
    seq = pad256(lm.n_ctx / static_cast<std::uint32_t>(lm.n_slots));
    lm.n_ctx = seq * static_cast<std::uint32_t>(lm.n_slots);
  }
  lm.n_ctx_slot = m.n_ctx_train > 0 ? std::min(seq, m.n_ctx_train) : seq;

  const Kv kv = kv_bytes(opt, m, lm.n_ctx, split);
  if (opt.fake_kv_fail) {
    logf(Level::trace, "llama_context: constructing llama_context");
    print_cuda_alloc_failure(std::max<std::uint64_t>(kv.gpu() + kv.cpu(), 1));
    logf(Level::error, "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache");
    logf(Level::error, "cmn  %s: failed to create context with model '%s'", fn12("common_init_result").c_str(), opt.model_path.c_str());
    logf(Level::error, "cmn  %s: failed to create context with model '%s'", fn12("common_init_from_params").c_str(), opt.model_path.c_str());
    logf(Level::error, "srv  %s: failed to create_context with model '%s'", fn12("load_model").c_str(), opt.model_path.c_str());
    return std::nullopt;
  }
  if (!load_adapters(opt, m, on_gpu, lm.adapters)) return std::nullopt;
  print_context_lines(opt, m, lm, kv, on_gpu);
  print_compute_lines(opt, m, on_gpu);
  logf(Level::info, "srv  %s: initializing, n_slots = %d, n_ctx_slot = %u, kv_unified = '%s'", fn12("load_model").c_str(),
       lm.n_slots, lm.n_ctx_slot, unified ? "true" : "false");
  for (int i = 0; i < lm.n_slots; i++) {
    logf(Level::trace, "slot %s: id %2d | task -1 | new slot, n_ctx = %u", fn12("load_model").c_str(), i, lm.n_ctx_slot);
  }
  return lm;
}

void print_exit_lines(const char* reason) {
  logf(Level::info, "srv  %s: operator(): cleaning up before exit...", fn12("operator()").c_str());
  logf(Level::error, "srv  %s: exiting due to %s", fn12("llama_server").c_str(), reason);
}

}  // namespace standin
