#include "supervisor/nvml.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

namespace kevlaya::supervisor::nvml {

namespace {

// The few NVML ABI pieces we use (stable since NVML 5; declared here to avoid the CUDA headers).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kSuccess = 0;

struct Api {
  bool ok = false;
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
};

Api load() {
  Api api;
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return api;  // no NVIDIA driver: normal on CPU-only machines
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(::dlsym(lib, "nvmlInit_v2"));
  api.get_handle = reinterpret_cast<decltype(api.get_handle)>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  api.get_memory = reinterpret_cast<decltype(api.get_memory)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  if (!init || !api.get_handle || !api.get_memory || init() != kSuccess) {
    spdlog::debug("nvml: library present but unusable; GPU memory waits disabled");
    return api;
  }
  api.ok = true;  // the library stays loaded for the life of the process
  return api;
}

const Api& api() {
  static const Api a = load();
  return a;
}

}  // namespace

bool available() { return api().ok; }

std::optional<MemInfo> memory(unsigned index) {
  const Api& a = api();
  if (!a.ok) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (a.get_handle(index, &dev) != kSuccess) return std::nullopt;
  nvmlMemory_t m{};
  if (a.get_memory(dev, &m) != kSuccess) return std::nullopt;
  return MemInfo{m.total, m.free, m.used};
}

}  // namespace kevlaya::supervisor::nvml
