// Builds GGUF byte strings by hand for reader tests (hostile ones included).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"

namespace kevlaya::test {

class Bytes {
 public:
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& u32(std::uint32_t v) { return put(v); }
  Bytes& u64(std::uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::string& s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  // "GGUF", version, tensor count, kv count.
  Bytes& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_u32(const std::string& k, std::uint32_t v) { return str(k).u32(4).u32(v); }
  Bytes& kv_str(const std::string& k, const std::string& v) { return str(k).u32(8).str(v); }
  // Tensor info: name, dims, type, offset.
  Bytes& tensor(const std::string& name, const std::vector<std::uint64_t>& ne, std::uint32_t type,
                std::uint64_t offset) {
    str(name).u32(static_cast<std::uint32_t>(ne.size()));
    for (auto d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Bytes& pad_to(std::size_t alignment) {
    while (b_.size() % alignment) b_.push_back(0);
    return *this;
  }
  Bytes& zeros(std::size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  std::size_t size() const { return b_.size(); }
  const std::vector<std::uint8_t>& data() const { return b_; }
  Result<gguf::File> parse() const { return gguf::read_buffer(b_.data(), b_.size()); }

 private:
  std::vector<std::uint8_t> b_;
};

// The error message of a parse that must fail ("" if it succeeded).
inline std::string parse_error(const Bytes& b) {
  auto r = b.parse();
  return r ? std::string() : r.error().message;
}

}  // namespace kevlaya::test
