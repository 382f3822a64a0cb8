// Low-level GGUF v3 emitter used by writer.cpp: metadata is buffered, tensor data is generated
// while writing (seeded), so multi-hundred-MB files never sit in memory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::gguf {

// How a tensor's elements are produced.
struct Fill {
  float constant = 0.0f;  // used when scale == 0
  float scale = 0.0f;     // > 0: uniform in [-scale, scale)
  std::uint64_t seed = 0;
  // Rows [zero_begin, zero_end) of `row_len` elements are written as zeros (row_len 0: none).
  std::uint64_t row_len = 0;
  std::uint64_t zero_begin = 0;
  std::uint64_t zero_end = 0;
};

class Builder {
 public:
  void kv_string(const std::string& key, const std::string& v);
  void kv_u32(const std::string& key, std::uint32_t v);
  void kv_f32(const std::string& key, float v);
  void kv_bool(const std::string& key, bool v);
  void kv_strings(const std::string& key, const std::vector<std::string>& v);
  void kv_f32s(const std::string& key, const std::vector<float>& v);
  void kv_i32s(const std::string& key, const std::vector<std::int32_t>& v);
  // Declares a tensor (type 0 = F32, 1 = F16); data offsets are packed in declaration order.
  void tensor(const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type, Fill fill);
  // Writes header, metadata, tensor infos and data, each tensor padded to `alignment`.
  Status write(const std::filesystem::path& out, std::uint64_t alignment = 32) const;

 private:
  struct Planned {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type;
    Fill fill;
  };
  std::string meta_;
  std::uint64_t n_kv_ = 0;
  std::vector<Planned> tensors_;
  void key(const std::string& k, std::uint32_t type);
};

// IEEE half from float (round to nearest even); exposed for tests.
std::uint16_t to_half(float f);

}  // namespace kevlaya::gguf
