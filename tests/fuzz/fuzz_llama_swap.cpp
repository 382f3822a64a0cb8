// libFuzzer entry for `import llama-swap`: any bytes, read as a llama-swap config.yaml by the
// product's importer, must end in a SwapImport (errors or a report for bad input), never a crash,
// an escaped exception, a hang or unbounded memory. Its promises are checked on every input: each
// profile name is a visible file name distinct from the others (case-insensitively), and each
// profile document is written.
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

#include "config/llama_swap.hpp"

namespace {

namespace fs = std::filesystem;
namespace cfg = kevlaya::config;

// One scratch folder per fuzzing process; the input is written to the same file every time.
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kevlaya-fuzz-swap-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check(const cfg::SwapImport& im) {
  for (const auto& d : im.errors) (void)d.format();
  for (const auto& d : im.report) (void)d.format();
  std::set<std::string> seen;
  for (const auto& p : im.profiles) {
    if (p.name.empty() || p.name[0] == '.' || p.name.find('/') != std::string::npos) std::abort();  // profiles/NAME.yaml
    if (!seen.insert(lower(p.name)).second) std::abort();  // one file would overwrite another
    (void)cfg::imported_profile_yaml(p, im);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path file = scratch() / "config.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  check(cfg::import_llama_swap(file));
  return 0;
}
