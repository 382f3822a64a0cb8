// Replays the committed fuzz seed corpus through the reader (CI runs this without clang/libFuzzer).
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "gguf/gguf.hpp"
#include "support/paths.hpp"

namespace gg = kevlaya::gguf;

TEST_CASE("corpus: every committed fuzz seed parses or fails with bad_model", "[gguf][fuzz]") {
  const auto dir = kevlaya::test::source_dir() / "tests" / "fuzz" / "corpus" / "gguf";
  int valid = 0, broken = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const std::string name = entry.path().filename().string();
    INFO(name);
    auto f = gg::read_buffer(bytes.data(), bytes.size());
    // Seeds are named for what they are: valid_* must parse, broken_* must not.
    if (name.rfind("valid_", 0) == 0) {
      REQUIRE(f.ok());
      CHECK(gg::model_info(*f).ok());
      ++valid;
    } else if (name.rfind("broken_", 0) == 0) {
      REQUIRE_FALSE(f.ok());
      CHECK(f.error().code == kevlaya::Errc::bad_model);
      CHECK(f.error().message.find(", at byte offset ") != std::string::npos);
      ++broken;
    } else if (f) {  // inputs the fuzzer added: only "no crash" is asserted
      (void)gg::model_info(*f);
    }
  }
  CHECK(valid >= 3);
  CHECK(broken >= 5);
}
