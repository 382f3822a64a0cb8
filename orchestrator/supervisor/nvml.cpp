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
constexpr unsigned kNameLen = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidLen = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct Api {
  bool ok = false;
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // Optional: without them every device is reported as index 0 only / without name and UUID.
  nvmlReturn_t (*get_count)(unsigned*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
};

Api load() {
  Api api;
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return api;  // no NVIDIA driver: normal on CPU-only machines
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(::dlsym(lib, "nvmlInit_v2"));
  api.get_handle = reinterpret_cast<decltype(api.get_handle)>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  api.get_memory = reinterpret_cast<decltype(api.get_memory)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  api.get_count = reinterpret_cast<decltype(api.get_count)>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
  api.get_name = reinterpret_cast<decltype(api.get_name)>(::dlsym(lib, "nvmlDeviceGetName"));
  api.get_uuid = reinterpret_cast<decltype(api.get_uuid)>(::dlsym(lib, "nvmlDeviceGetUUID"));
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

std::vector<DeviceInfo> devices() {
  const Api& a = api();
  std::vector<DeviceInfo> out;
  if (!a.ok) return out;
  unsigned count = 1;
  if (a.get_count && a.get_count(&count) != kSuccess) return out;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlMemory_t m{};
    if (a.get_handle(i, &dev) != kSuccess || a.get_memory(dev, &m) != kSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.memory = {m.total, m.free, m.used};
    char buf[kNameLen > kUuidLen ? kNameLen : kUuidLen] = {};
    if (a.get_name && a.get_name(dev, buf, kNameLen) == kSuccess) d.name = buf;
    buf[0] = '\0';
    if (a.get_uuid && a.get_uuid(dev, buf, kUuidLen) == kSuccess) d.uuid = buf;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kevlaya::supervisor::nvml
