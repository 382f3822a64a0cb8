// The `run` summary's stage table (issue 14): the ms/call and tok/s columns ran together once a value
// outgrew its fixed width (the stand-in's 0.001 ms timings give tens of millions of tokens/s).
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>

#include "cli/summary_table.hpp"

using kevlaya::cli::format_columns;
using kevlaya::cli::stage_table;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("run summary: ms/call and tok/s columns stay apart, however large the numbers", "[summary]") {
  kevlaya::pipeline::RunSummary s;
  auto& a = s.stages.emplace_back();
  a.stage = "decide";
  a.model = "kev-with-a-long-profile-name";
  a.calls = 1234567;
  a.invalid = 7654321;
  a.call_ms = 1234567.0 * 98765432.1;  // ms/call 98765432.1
  a.predicted_n = 64000;
  a.predicted_ms = 0.001;  // 64,000,000,000.0 tok/s
  auto& b = s.stages.emplace_back();
  b.stage = "verify";
  b.model = "laya";
  b.calls = 1;
  b.call_ms = 5;
  const auto lines = split_lines(stage_table(s));
  REQUIRE(lines.size() == 3);
  INFO(stage_table(s));
  // Every row splits into exactly six fields at runs of spaces; the numbers are whole.
  const std::regex fields("^  (\\S+)  +(\\S+)  +(\\S+)  +(\\S+)  +(\\S+)  +(\\S+)$");
  std::smatch m;
  REQUIRE(std::regex_match(lines[1], m, fields));
  CHECK(m[3] == "1234567");
  CHECK(m[4] == "7654321");
  CHECK(m[5] == "98765432.1");
  CHECK(m[6] == "64000000000.0");
  CHECK(std::regex_match(lines[0], fields));
  CHECK(std::regex_match(lines[2], fields));
  // Right-aligned numbers end in the same column as their header.
  CHECK(lines[0].size() == lines[1].size());
  CHECK(lines[1].size() == lines[2].size());
  CHECK(lines[0].find("ms/call") + 7 == lines[1].find("98765432.1") + 10);
}

TEST_CASE("run summary: columns count code points, not bytes, and escape control bytes", "[summary]") {
  const auto text = format_columns({{"id", "n"}, {"d\xc3\xa9j\xc3\xa0", "1"}, {"x", "22"}}, {false, true});
  CHECK(text == "  id     n\n  d\xc3\xa9j\xc3\xa0   1\n  x     22\n");
  kevlaya::pipeline::RunSummary s;
  auto& a = s.stages.emplace_back();
  a.stage = "st\x1b[2J";
  a.model = "kev";
  CHECK(stage_table(s).find('\x1b') == std::string::npos);
  CHECK(stage_table(s).find("st\\x1B[2J") != std::string::npos);
}
