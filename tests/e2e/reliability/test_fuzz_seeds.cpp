// The committed fuzz seeds of the config loader and the door's request framing, replayed in every
// normal build (CI runs no clang): what the fuzz targets check, on the seed corpora.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "config/config.hpp"
#include "fuzz/parse_request.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> seeds(const std::string& kind) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(source_dir() / "tests/fuzz/corpus" / kind)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

TEST_CASE("config fuzz seeds: every seed loads to diagnostics without throwing", "[fuzz][config]") {
  const auto files = seeds("config");
  REQUIRE(files.size() >= 10);
  for (const auto& f : files) {
    INFO(f.filename().string());
    kevlaya::config::LoadResult orch, profile, pipeline;
    REQUIRE_NOTHROW(orch = kevlaya::config::load(f));
    REQUIRE_NOTHROW(profile = kevlaya::config::load_profile_file(f));
    REQUIRE_NOTHROW(pipeline = kevlaya::config::load_pipeline_file(f));
    if (starts_with(f.filename().string(), "broken_"))
      CHECK((!orch.ok() || !profile.ok() || !pipeline.ok()));
  }
}

TEST_CASE("config: a model path longer than the OS allows is a diagnostic, not an exception",
          "[fuzz][config]") {
  TempDir dir("config-long-path");
  const auto file = dir / "p.yaml";
  write_text(file, "name: p\nmodel: " + std::string(5000, 'x') + ".gguf\nlora: [{path: " +
                       std::string(5000, 'y') + "}]\n");
  kevlaya::config::LoadResult r;
  REQUIRE_NOTHROW(r = kevlaya::config::load_profile_file(file));
  CHECK_FALSE(r.ok());
  bool model_not_found = false;
  for (const auto& d : r.diagnostics) model_not_found |= d.format().find("model file not found") != std::string::npos;
  CHECK(model_not_found);
  write_text(dir / "k.yaml", "profiles_dir: " + std::string(5000, 'z') + "\n");
  REQUIRE_NOTHROW(r = kevlaya::config::load(dir / "k.yaml"));
  CHECK_FALSE(r.ok());
}

TEST_CASE("http fuzz seeds: ok_ parse whole, smuggle_ and bad_ are refused with 400/413", "[fuzz][http]") {
  const auto files = seeds("http");
  REQUIRE(files.size() >= 10);
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    const std::string raw = read_text(f);
    INFO(name);
    const auto p = kevlaya::fuzz::parse_request(raw, 16 * 1024, 1 << 20);
    if (starts_with(name, "ok_")) {
      CHECK(p.status == 0);
      CHECK(p.complete);
    } else if (starts_with(name, "smuggle_")) {
      CHECK(p.status == 400);
    } else if (name != "bad_traversal.http") {  // a traversal target is well-formed HTTP (404 later)
      CHECK((p.status == 400 || p.status == 413));
    }
  }
}
