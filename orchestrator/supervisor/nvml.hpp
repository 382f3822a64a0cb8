// Minimal NVML access through dlopen("libnvidia-ml.so.1"): no build-time dependency on CUDA.
// Without an NVIDIA driver every call reports "no GPU" and callers skip GPU-memory waits.
#pragma once
#include <cstdint>
#include <optional>

namespace kevlaya::supervisor::nvml {

struct MemInfo {
  std::uint64_t total = 0;
  std::uint64_t free = 0;
  std::uint64_t used = 0;
};

// True when libnvidia-ml loaded and nvmlInit succeeded (cached after the first call).
bool available();
// Memory of GPU `index`; nullopt without NVML or on error.
std::optional<MemInfo> memory(unsigned index = 0);

}  // namespace kevlaya::supervisor::nvml
