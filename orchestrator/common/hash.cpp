#include "common/hash.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

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

namespace {

// Fingerprints already computed, by the file's identity and version (device, inode, size, mtime):
// a start and every reload ask again for every model, and each answer hashes 2 MiB (a folder of
// 2,000 models spent most of its start here). A rewritten file has a new size or mtime.
using FileVersion = std::tuple<dev_t, ino_t, off_t, std::int64_t, std::int64_t>;
constexpr std::size_t kMaxRemembered = 1 << 16;

std::optional<FileVersion> version_of(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileVersion{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

std::mutex remembered_mu;
std::map<FileVersion, std::string>& remembered() {
  static std::map<FileVersion, std::string> m;
  return m;
}

Result<std::string> compute_fingerprint(const std::filesystem::path& path);

}  // namespace

Result<std::string> file_fingerprint(const std::filesystem::path& path) {
  const auto version = version_of(path);
  if (version) {
    std::lock_guard<std::mutex> lock(remembered_mu);
    if (const auto it = remembered().find(*version); it != remembered().end()) return it->second;
  }
  auto fp = compute_fingerprint(path);
  if (fp && version && version == version_of(path)) {  // unchanged while it was read
    std::lock_guard<std::mutex> lock(remembered_mu);
    if (remembered().size() >= kMaxRemembered) remembered().clear();
    remembered().emplace(*version, *fp);
  }
  return fp;
}

namespace {

Result<std::string> compute_fingerprint(const std::filesystem::path& path) {
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

}  // namespace

}  // namespace kevlaya
