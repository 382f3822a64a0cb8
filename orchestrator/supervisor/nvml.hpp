// Minimal NVML access through dlopen("libnvidia-ml.so.1"): no build-time dependency on CUDA.
// Without an NVIDIA driver every call reports "no GPU" and callers skip GPU-memory waits.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kevlaya::supervisor::nvml {

struct MemInfo {
  std::uint64_t total = 0;
  std::uint64_t free = 0;
  std::uint64_t used = 0;
};

// One GPU as NVML enumerates it (PCI bus order, the order nvidia-smi shows).
struct DeviceInfo {
  unsigned index = 0;
  std::string name;  // "NVIDIA GeForce RTX 3060"; empty when NVML cannot tell
  std::string uuid;  // "GPU-8f2c..."; CUDA_VISIBLE_DEVICES accepts it; empty when unknown
  MemInfo memory;
};

// True when libnvidia-ml loaded and nvmlInit succeeded (cached after the first call).
bool available();
// Memory of GPU `index`; nullopt without NVML or on error.
std::optional<MemInfo> memory(unsigned index = 0);
// Every GPU NVML reports (empty without NVML); a device whose memory cannot be read is left out.
std::vector<DeviceInfo> devices();

}  // namespace kevlaya::supervisor::nvml
