// Non-cryptographic hashing shared by every module: 64-bit FNV-1a (stable across runs and
// builds, so its digests may be stored in files) and hex spelling.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya {

inline constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;

// FNV-1a of `n` bytes at `data`, continuing from `h` (start with kFnvOffset).
inline std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}
inline std::uint64_t fnv1a(std::string_view s) { return fnv1a(kFnvOffset, s.data(), s.size()); }

// `n` bytes as 2n lowercase hex digits.
std::string to_hex(const unsigned char* data, std::size_t n);
// A 64-bit value as exactly 16 lowercase hex digits.
std::string hex16(std::uint64_t v);

// The one identity of a (possibly multi-GB) model or adapter file, as 16 hex digits: FNV-1a of its
// size and its first and last MiB. Content only (a copy keeps it), so it may key stored data
// (ledger measurements, slot files). Errc::io_error when the file cannot be read.
Result<std::string> file_fingerprint(const std::filesystem::path& path);

}  // namespace kevlaya
