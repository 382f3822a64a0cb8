// Pretend model load: reads the GGUF with the project reader and prints the llama.cpp load
// lines (buffer sizes computed from the metadata like llama.cpp does), or the exact failure
// chains of a missing/corrupt file, a CUDA OOM, a KV-cache allocation failure or a bad LoRA.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "options.hpp"

namespace standin {

struct Adapter {
  std::string path;
  float scale = 1.0f;  // current global scale (POST /lora-adapters changes it)
};

struct LoadedModel {
  kevlaya::gguf::ModelInfo info;
  std::uint32_t n_ctx = 0;       // KV cells in total
  std::uint32_t n_ctx_slot = 0;  // context per slot
  int n_slots = 1;
  std::vector<Adapter> adapters;
};

// Step 1 (right after binding): "loading model" line and the GGUF metadata. On failure prints
// the real error chain (ending before the final "exiting" line) and returns nullopt.
std::optional<kevlaya::gguf::ModelInfo> read_model(const Options& opt);

// Default simulated load time: 1 ms per MiB of file, at least 5 ms.
int default_load_ms(std::uint64_t file_size);

// Step 2 (after the simulated load time): tensor/KV/compute lines, adapters, slots.
// Honours --fake-cuda-oom / --fake-kv-fail. nullopt after printing a failure chain.
std::optional<LoadedModel> finish_load(const Options& opt, const kevlaya::gguf::ModelInfo& info);

// Prints the two closing lines of a failed load ("cleaning up", "exiting due to ...").
void print_exit_lines(const char* reason);

}  // namespace standin
