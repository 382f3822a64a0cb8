#include "common/hash.hpp"

#include <algorithm>
#include <fstream>

namespace kevlaya {

std::string to_hex(const unsigned char* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

std::string hex16(std::uint64_t v) {
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 0xf];
  return out;
}

Result<std::string> file_fingerprint(const std::filesystem::path& path) {
  constexpr std::uint64_t kEdge = 1 << 20;
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(Errc::io_error, "cannot read " + path.string() + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::io_error, "cannot open " + path.string());
  std::string chunk(static_cast<std::size_t>(std::min(size, kEdge)), '\0');
  // The size's native bytes first: keys stored by earlier versions stay valid.
  std::uint64_t h = fnv1a(kFnvOffset, &size, sizeof size);
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  h = fnv1a(h, chunk.data(), static_cast<std::size_t>(in.gcount()));
  in.seekg(static_cast<std::streamoff>(size - chunk.size()));
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  h = fnv1a(h, chunk.data(), static_cast<std::size_t>(in.gcount()));
  return hex16(h);
}

}  // namespace kevlaya
