// Names taken from model file names (docs/security.md): a profile name is short enough to be part of
// every file name made from it, and what notes and locations show of a file name is printable.
#include <catch2/catch.hpp>

#include "common/bytes.hpp"
#include "config/models_dir.hpp"
#include "fixture.hpp"
#include "gguf/writer.hpp"
#include "support/models.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

bool printable_text(const std::string& s) {
  if (utf8_error(s)) return false;
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

TEST_CASE("models_dir names: a 245-character file name gives a bounded name, distinct per file") {
  const std::string stem(245, 'a');
  const auto a = config::model_name_from_file("/m/" + stem + ".gguf");
  const auto b = config::model_name_from_file("/m/" + stem + "b.gguf");
  CHECK(a.size() <= config::kMaxModelNameBytes);
  CHECK(b.size() <= config::kMaxModelNameBytes);
  CHECK(a != b);  // cut to the same prefix, told apart by the file name's hash
  CHECK(a.rfind(std::string(100, 'a'), 0) == 0);
  CHECK(config::model_name_from_file("/m/" + stem + ".gguf") == a);  // stable across runs
  CHECK(config::model_name_from_file("/m/short.gguf") == "short");   // short names are unchanged
}

TEST_CASE("models_dir names: newlines and invalid bytes in file names never reach notes or locations raw") {
  test::TempDir dir("models-dir-names");
  const std::string hostile = "evil\n2026-01-01 [info] forged line\x1b[31m\xff\xfe";
  REQUIRE(gguf::write_tiny_model(dir / (hostile + ".gguf"), kevlaya::test::small_model_spec()).ok());
  test::write_text(dir / (hostile + "-broken.gguf"), "not a GGUF");
  const auto d = config::discover(config::scan_models_dir(dir.path()), "srv", {});
  REQUIRE(d.profiles.size() == 1);
  CHECK(printable_text(d.profiles[0].name));
  CHECK(printable_text(d.profiles[0].loc.file));
  CHECK(d.profiles[0].model == dir / (hostile + ".gguf"));  // the path itself is kept exact for the child
  REQUIRE(d.notes.size() == 1);
  CHECK(printable_text(d.notes[0]));
  CHECK(d.notes[0].find("\\x0A") != std::string::npos);  // the newline is shown, escaped
}

TEST_CASE("models_dir names: the loader's warnings about a hostile file name are one printable line") {
  test::TempDir dir("models-dir-names-load");
  fs::create_directories(dir / "models");
  REQUIRE(gguf::write_tiny_model(dir / "models/ok.gguf", kevlaya::test::small_model_spec()).ok());
  test::write_text(dir / "models/bad\nname\xff.gguf", "not a GGUF");
  const auto r = config::load(config::Source{"", dir / "models"});
  INFO(test::dump(r));
  REQUIRE(r.ok());
  bool saw = false;
  for (const auto& diag : r.diagnostics) {
    CHECK(printable_text(diag.format()));
    saw = saw || diag.message.find("bad\\x0Aname\\xFF.gguf") != std::string::npos;
  }
  CHECK(saw);
}
