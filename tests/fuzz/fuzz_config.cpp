// libFuzzer entry for the YAML config loader: any bytes, read as an orchestrator file, a profile
// and a pipeline, must end in a LoadResult (diagnostics for bad input), never a crash, an escaped
// exception, a hang or unbounded memory. What loads is also turned into child argv lines.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.hpp"

namespace {

namespace fs = std::filesystem;
namespace cfg = kevlaya::config;

// One scratch folder per fuzzing process; the input is written to the same file every time.
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kevlaya-fuzz-config-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

void exercise(const cfg::LoadResult& r) {
  for (const auto& d : r.diagnostics) (void)d.format();
  for (const auto& p : r.config.profiles) (void)cfg::shell_join(cfg::build_argv(p, "127.0.0.1", 8081));
  (void)r.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path file = scratch() / "kevlaya.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  exercise(cfg::load(file));
  exercise(cfg::load_profile_file(file));
  exercise(cfg::load_pipeline_file(file));
  return 0;
}
