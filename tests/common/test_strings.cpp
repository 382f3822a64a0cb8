// The small string helpers (common/strings.hpp).
#include <catch2/catch.hpp>

#include "common/strings.hpp"

using namespace kevlaya;

TEST_CASE("join writes each item by its text function with the separator between", "[strings]") {
  const auto num = [](int x) { return std::to_string(x); };
  CHECK(join(std::vector<int>{0, 1, 3}, ",", num) == "0,1,3");
  CHECK(join(std::vector<int>{7}, ", ", num) == "7");
  CHECK(join(std::vector<int>{}, ",", num).empty());
  // An item whose text is empty still has its separator: the list keeps its length.
  CHECK(join(std::vector<std::string>{"", "b"}, "+", [](const std::string& s) { return s; }) == "+b");
  CHECK(join(std::vector<std::string>{"a", "b"}, ", ") == "a, b");
}

TEST_CASE("ascii_lower lowers ASCII letters only, trim_blanks drops spaces and tabs at the ends", "[strings]") {
  CHECK(ascii_lower("Content-Type: \xC3\x84" "B") == "content-type: \xC3\x84" "b");  // UTF-8 bytes as they are
  CHECK(trim_blanks(" \t a b\t ") == "a b");
  CHECK(trim_blanks(" \t ").empty());
  CHECK(trim_blanks("\nx\n") == "\nx\n");  // only blanks
}

TEST_CASE("contains_ascii_ci finds a lower-case part in any case, without a copy", "[strings]") {
  CHECK(kevlaya::contains_ascii_ci("X-API-Key", "key"));
  CHECK(kevlaya::contains_ascii_ci("Proxy-AUTHORIZATION", "auth"));
  CHECK(kevlaya::contains_ascii_ci("token", "token"));
  CHECK_FALSE(kevlaya::contains_ascii_ci("X-Session-ID", "key"));
  CHECK_FALSE(kevlaya::contains_ascii_ci("ke", "key"));
  CHECK(kevlaya::contains_ascii_ci("anything", ""));
}
