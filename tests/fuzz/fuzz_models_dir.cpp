// libFuzzer entry for the model-folder scanner (config/models_dir.hpp): the input is a small folder,
// file names and contents, written to disk and scanned as `serve --models-dir` scans it. Whatever
// the names (newlines, escapes, invalid UTF-8, 250 bytes) and contents (GGUF or not, cut short),
// scanning and discovery end in profiles and notes, never a crash or an escaped exception; every
// profile name is short, of [A-Za-z0-9._-] and unique, and every note and location is printable.
//
// Input: up to kMaxFiles records, each [name length L][min(L, 250) name bytes][content length, 2
// bytes little-endian][content]. ".gguf" is appended to a name that lacks it (the scanner reads only
// *.gguf) unless it starts with '!', which is dropped (another file). '/' and NUL become '_'.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/bytes.hpp"
#include "config/models_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace cfg = kevlaya::config;

constexpr std::size_t kMaxFiles = 16;
constexpr std::size_t kMaxNameBytes = 250;

// One scratch folder per fuzzing process, emptied before each input.
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kevlaya-fuzz-models-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

void reset(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
}

bool printable_text(const std::string& s) {
  if (kevlaya::utf8_error(s)) return false;
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > cfg::kMaxModelNameBytes) return false;
  for (const unsigned char c : s)
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

// Writes the records of `data` into `dir`; stops at the first record cut short.
void write_files(const fs::path& dir, const std::uint8_t* data, std::size_t size) {
  std::size_t at = 0;
  for (std::size_t n = 0; n < kMaxFiles && at < size; ++n) {
    const std::size_t len = data[at++];
    const std::size_t take = std::min(len, kMaxNameBytes);
    if (at + take + 2 > size) return;
    std::string name(reinterpret_cast<const char*>(data + at), take);
    at += take;
    for (auto& c : name)
      if (c == '/' || c == '\0') c = '_';
    const bool other = !name.empty() && name[0] == '!';
    const bool ends_gguf = name.size() >= 5 && name.compare(name.size() - 5, 5, ".gguf") == 0;
    if (other) name.erase(0, 1);
    else if (!ends_gguf) name += ".gguf";
    const std::size_t body = std::min<std::size_t>(data[at] | (std::size_t(data[at + 1]) << 8), size - at - 2);
    at += 2;
    if (name == "." || name == "..") {
      at += body;
      continue;
    }
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + at), static_cast<std::streamsize>(body));
    at += body;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& dir = scratch();
  reset(dir);
  write_files(dir, data, size);
  const auto facts = cfg::scan_models_dir(dir);
  const auto d = cfg::discover(facts, "llama-server", {"taken"});
  std::set<std::string> names;
  for (const auto& p : d.profiles) {
    if (!valid_name(p.name) || !names.insert(p.name).second) std::abort();
    if (!printable_text(p.loc.file) || p.name == "taken") std::abort();
  }
  for (const auto& n : d.notes)
    if (!printable_text(n)) std::abort();
  return 0;
}
