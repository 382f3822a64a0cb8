// Task data that fights back (issue 14): control bytes in task ids must not reach the terminal, a
// journal line that is JSON but not a record stops --resume, and an --input that is not UTF-8 is
// journaled (replaced) instead of throwing.
#include <catch2/catch.hpp>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

json pass_script() {
  return json::array({{{"model", "kev"}, {"reply", "cache"}},
                      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}}});
}

// ESC [2J clears a terminal, BEL rings, CSI (U+009B) is a C1 escape, U+202E reverses text.
const std::string kEvilId = "t\x1b[2J\x07\xc2\x9b" "1m\xe2\x80\xae" "x";

}  // namespace

TEST_CASE("control bytes of task ids reach the terminal escaped, in the task list and bad-line reports") {
  RunProject p(pass_script());
  p.tasks("tasks.jsonl", {task_line(kEvilId, "one"), task_line(kEvilId, "duplicate")});
  const auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char c : std::string("\x1b\x07"))
    CHECK(r.output.find(c) == std::string::npos);
  CHECK(r.output.find("\xc2\x9b") == std::string::npos);
  CHECK(r.output.find("\xe2\x80\xae") == std::string::npos);
  // Listed once as the task, once in the duplicate-id report.
  const std::string shown = "t\\x1B[2J\\x07\\u{009B}1m\\u{202E}x";
  CHECK(r.output.find("  " + shown + "  accepted  decision cache (1 round)\n") != std::string::npos);
  CHECK(r.output.find("duplicate id '" + shown + "'") != std::string::npos);
  // The journal keeps the id exactly (JSON escapes it).
  const auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0]["id"] == kEvilId);
}

TEST_CASE("run --resume with a journal line [1,2] stops naming file and line and leaves the journal alone") {
  RunProject p(pass_script());
  p.tasks("tasks.jsonl", {task_line("a", "one"), task_line("b", "two")});
  const std::string text = R"({"id":"a","verdict":"accepted"})" "\n[1,2]\n";
  write_text(p.dir / "out.jsonl", text);
  const auto r = p.run("--input-file tasks.jsonl --output out.jsonl --resume");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("out.jsonl: line 2 is not a journal record (array; expected an object with a string \"id\")") !=
        std::string::npos);
  CHECK(read_text(p.dir / "out.jsonl") == text);
}

TEST_CASE("an --input that is not UTF-8 runs and is journaled with U+FFFD, the --json summary too") {
  RunProject p(pass_script());
  const auto r = p.run_stdout("--input $(printf 'caf\\351') --candidates cache,retry --output out.jsonl --json");
  INFO(r.output << read_text(p.dir / "stderr.txt"));
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.output)["accepted"] == 1);
  const auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0]["input"] == "caf\xef\xbf\xbd");
}
