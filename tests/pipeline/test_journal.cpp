#include <catch2/catch.hpp>

#include "pipeline/journal.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;
using namespace kevlaya::test;
using nlohmann::json;

namespace {
json record(const std::string& id, const std::string& verdict) {
  return json{{"id", id}, {"verdict", verdict}, {"rounds", 1}};
}
}  // namespace

TEST_CASE("journal appends one line per record and reads them back on resume", "[journal]") {
  TempDir dir("journal-basic");
  const auto path = dir / "run.jsonl";
  {
    auto j = Journal::open(path, Journal::Mode::create);
    REQUIRE(j.ok());
    REQUIRE(j->append(record("t1", "accepted")).ok());
    REQUIRE(j->append(record("t2", "rejected")).ok());
    REQUIRE(j->append(record("t3", "error")).ok());
    CHECK(j->completed() == std::set<std::string>{"t1", "t2"});
  }
  CHECK(read_text(path) ==
        "{\"id\":\"t1\",\"rounds\":1,\"verdict\":\"accepted\"}\n"
        "{\"id\":\"t2\",\"rounds\":1,\"verdict\":\"rejected\"}\n"
        "{\"id\":\"t3\",\"rounds\":1,\"verdict\":\"error\"}\n");
  auto r = Journal::open(path, Journal::Mode::resume);
  REQUIRE(r.ok());
  CHECK(r->existing().size() == 3);
  CHECK(r->completed() == std::set<std::string>{"t1", "t2"});  // errors run again
  CHECK_FALSE(r->dropped_torn_line());
}

TEST_CASE("journal create refuses to overwrite an existing run", "[journal]") {
  TempDir dir("journal-create");
  const auto path = dir / "run.jsonl";
  write_text(path, "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n");
  auto j = Journal::open(path, Journal::Mode::create);
  REQUIRE_FALSE(j.ok());
  CHECK(j.error().hint.find("--resume") != std::string::npos);
  CHECK(read_text(path) == "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n");
}

TEST_CASE("journal resume drops and truncates a torn last line before appending", "[journal]") {
  TempDir dir("journal-torn");
  const auto path = dir / "run.jsonl";
  write_text(path, "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n{\"id\":\"t2\",\"verd");
  {
    auto j = Journal::open(path, Journal::Mode::resume);
    REQUIRE(j.ok());
    CHECK(j->dropped_torn_line());
    CHECK(j->completed() == std::set<std::string>{"t1"});
    REQUIRE(j->append(record("t2", "accepted")).ok());
  }
  CHECK(read_text(path) ==
        "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n{\"id\":\"t2\",\"rounds\":1,\"verdict\":\"accepted\"}\n");
  auto again = Journal::open(path, Journal::Mode::resume);
  REQUIRE(again.ok());
  CHECK(again->existing().size() == 2);
}

TEST_CASE("journal resume treats a garbage final line (e.g. NUL fill after a crash) as torn", "[journal]") {
  TempDir dir("journal-nul");
  const auto path = dir / "run.jsonl";
  write_text(path, std::string("{\"id\":\"t1\",\"verdict\":\"accepted\"}\n") + std::string(8, '\0') + "\n");
  auto j = Journal::open(path, Journal::Mode::resume);
  REQUIRE(j.ok());
  CHECK(j->dropped_torn_line());
  CHECK(read_text(path) == "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n");
}

TEST_CASE("journal resume reports a corrupt line in the middle with its number", "[journal]") {
  TempDir dir("journal-corrupt");
  const auto path = dir / "run.jsonl";
  write_text(path, "{\"id\":\"t1\",\"verdict\":\"accepted\"}\nnot json\n{\"id\":\"t3\",\"verdict\":\"accepted\"}\n");
  auto j = Journal::open(path, Journal::Mode::resume);
  REQUIRE_FALSE(j.ok());
  CHECK(j.error().code == Errc::io_error);
  CHECK(j.error().message.find("run.jsonl: line 2 is corrupt") != std::string::npos);
}

TEST_CASE("journal resume rejects a line [1,2] (valid JSON, not a record) naming file and line, file unchanged",
          "[journal]") {
  TempDir dir("journal-notrecord");
  const auto path = dir / "run.jsonl";
  const std::string good = "{\"id\":\"t1\",\"verdict\":\"accepted\"}\n";
  // In the middle, as the last line, without its newline, and an object without an id.
  for (const std::string& text : {good + "[1,2]\n" + good, good + "[1,2]\n", good + "[1,2]",
                                  good + "{\"verdict\":\"accepted\"}\n"}) {
    INFO(text);
    write_text(path, text);
    auto j = Journal::open(path, Journal::Mode::resume);
    REQUIRE_FALSE(j.ok());
    CHECK(j.error().code == Errc::io_error);
    CHECK(j.error().message.find("run.jsonl: line 2 is not a journal record (") != std::string::npos);
    CHECK(j.error().message.find("expected an object with a string \"id\"") != std::string::npos);
    CHECK(read_text(path) == text);  // nothing lost: the user decides
  }
}

TEST_CASE("journal resume of a missing file starts empty, a later error record reopens a task", "[journal]") {
  TempDir dir("journal-missing");
  const auto path = dir / "sub" / "run.jsonl";
  auto j = Journal::open(path, Journal::Mode::resume);
  REQUIRE(j.ok());
  CHECK(j->existing().empty());
  REQUIRE(j->append(record("t1", "accepted")).ok());
  REQUIRE(j->append(record("t1", "error")).ok());
  CHECK(j->completed().empty());
}

TEST_CASE("journal writes raw text with invalid UTF-8 without throwing", "[journal]") {
  TempDir dir("journal-utf8");
  auto j = Journal::open(dir / "run.jsonl", Journal::Mode::create);
  REQUIRE(j.ok());
  json rec = record("t1", "error");
  rec["raw"] = std::string("bad \xC3\x28");
  REQUIRE(j->append(rec).ok());
  auto back = json::parse(read_text(dir / "run.jsonl"));
  CHECK(back["raw"].get<std::string>().rfind("bad ", 0) == 0);
}
