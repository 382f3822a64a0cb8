#include "warm/slot_cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "common/hash.hpp"
#include "config/backend.hpp"
#include "config/fingerprint.hpp"

namespace kevlaya::warm {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxFileName = 200;

// A text with its terminating NUL, so "ab"+"c" and "a"+"bc" differ.
std::uint64_t mix(std::uint64_t h, const std::string& s) { return fnv1a(h, s.data(), s.size() + 1); }

// The model's fingerprint plus its mtime: a file rewritten in place never restores old slots.
Result<std::string> model_identity(const fs::path& path) {
  auto fp = file_fingerprint(path);
  if (!fp) return fp.error();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error(Errc::io_error, "cannot stat " + path.string());
  return *fp + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

Result<std::string> slot_key(const config::Profile& p) {
  auto model = model_identity(p.model);
  if (!model) return model.error();
  std::uint64_t h = mix(kFnvOffset, *model);
  h = mix(h, config::fingerprint(p));  // any change to what the child runs (argv, env) invalidates its slots
  for (const auto& l : p.lora) {
    auto lf = model_identity(l.path);
    if (!lf) return lf.error();
    h = mix(h, *lf);  // the scale is in the fingerprint's --lora word
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

std::optional<fs::path> slot_save_dir(const config::Profile& p, const fs::path& state_dir) {
  if (!p.slot_cache.enabled || !config::backend_of(p).llama_server || state_dir.empty()) return std::nullopt;
  return slot_dir(state_dir, p.name);
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
