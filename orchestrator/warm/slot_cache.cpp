#include "warm/slot_cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

namespace kevlaya::warm {

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
constexpr std::size_t kEdgeBytes = 1 << 20;  // hashed at each end of the file
constexpr std::size_t kMaxFileName = 200;

std::uint64_t fnv1a(std::uint64_t h, const char* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= kFnvPrime;
  }
  return h;
}

std::uint64_t fnv1a(std::uint64_t h, const std::string& s) { return fnv1a(h, s.data(), s.size() + 1); }

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<std::string> file_fingerprint(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error(Errc::io_error, "cannot stat " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::io_error, "cannot read " + path.string());
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t h = fnv1a(kFnvOffset, std::to_string(size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                                          std::to_string(st.st_mtim.tv_nsec));
  std::vector<char> buf(kEdgeBytes);
  in.read(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(size, kEdgeBytes)));
  h = fnv1a(h, buf.data(), static_cast<std::size_t>(in.gcount()));
  if (size > kEdgeBytes) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(size > 2 * kEdgeBytes ? size - kEdgeBytes : kEdgeBytes));
    in.read(buf.data(), static_cast<std::streamsize>(kEdgeBytes));
    h = fnv1a(h, buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return hex16(h);
}

Result<std::string> slot_key(const config::Profile& p) {
  auto model = file_fingerprint(p.model);
  if (!model) return model.error();
  std::uint64_t h = fnv1a(kFnvOffset, *model);
  const std::string shape = "ctx=" + std::to_string(p.ctx) + ";np=" + std::to_string(p.parallel) +
                            ";ctk=" + p.cache_type_k + ";ctv=" + p.cache_type_v;
  h = fnv1a(h, shape);
  for (const auto& l : p.lora) {
    auto lf = file_fingerprint(l.path);
    if (!lf) return lf.error();
    h = fnv1a(h, *lf + "@" + std::to_string(l.scale));
  }
  return hex16(h);
}

bool safe_file_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxFileName || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

fs::path slot_dir(const fs::path& state_dir, const std::string& profile) {
  std::string safe;
  for (char c : profile) safe += safe_file_name(std::string(1, c)) || c == '.' ? c : '_';
  if (safe.empty() || safe.front() == '.') safe.insert(0, "_");  // never "." or ".."
  return state_dir / "slots" / safe;
}

std::string slot_file_name(const std::string& key, int slot) {
  return key + "-slot" + std::to_string(slot) + ".bin";
}

int enforce_cap(const fs::path& dir, std::int64_t max_bytes) {
  struct Entry {
    fs::path path;
    fs::file_time_type mtime;
    std::int64_t size;
  };
  std::vector<Entry> files;
  std::int64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".bin") continue;
    Entry e{it->path(), it->last_write_time(ec), static_cast<std::int64_t>(it->file_size(ec))};
    if (ec) continue;
    total += e.size;
    files.push_back(std::move(e));
  }
  std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  int removed = 0;
  for (const auto& f : files) {
    if (total <= max_bytes) break;
    if (fs::remove(f.path, ec)) {
      total -= f.size;
      ++removed;
    }
  }
  return removed;
}

}  // namespace kevlaya::warm
