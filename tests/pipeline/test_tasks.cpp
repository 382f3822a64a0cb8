#include <catch2/catch.hpp>

#include "pipeline/tasks.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;
using namespace kevlaya::test;

TEST_CASE("parse_tasks reads id, input, candidates and vars", "[tasks]") {
  auto l = parse_tasks(
      "{\"id\":\"t1\",\"input\":\"Where?\",\"candidates\":[\"Paris\",\"Lyon\"],\"city\":\"Paris\",\"n\":3}\n"
      "{\"id\":42,\"input\":\"x\",\"meta\":{\"a\":[1]}}\r\n");
  REQUIRE(l.issues.empty());
  REQUIRE(l.tasks.size() == 2);
  const auto& t = l.tasks[0];
  CHECK(t.id == "t1");
  CHECK(t.input == "Where?");
  CHECK(t.candidates == std::optional<std::vector<std::string>>({"Paris", "Lyon"}));
  CHECK(t.vars == std::map<std::string, std::string>{{"city", "Paris"}, {"n", "3"}});
  CHECK(t.line == 1);
  CHECK(l.tasks[1].id == "42");
  CHECK_FALSE(l.tasks[1].candidates);
  CHECK(l.tasks[1].vars.at("meta") == R"({"a":[1]})");
}

TEST_CASE("parse_tasks reports bad lines with line numbers and keeps going", "[tasks]") {
  auto l = parse_tasks(
      "\xEF\xBB\xBF{\"id\":\"ok1\",\"input\":\"a\"}\n"
      "\n"
      "not json\n"
      "[1,2]\n"
      "{\"input\":\"no id\"}\n"
      "{\"id\":\"t\",\"input\":5}\n"
      "{\"id\":\"t\",\"input\":\"a\",\"candidates\":[1]}\n"
      "{\"id\":\"ok1\",\"input\":\"dup\"}\n"
      "{\"id\":1.5,\"input\":\"a\"}\n"
      "{\"id\":\"ok2\",\"input\":\"b\"}");
  REQUIRE(l.tasks.size() == 2);
  CHECK(l.tasks[1].id == "ok2");
  CHECK(l.tasks[1].line == 10);
  std::vector<int> lines;
  for (const auto& i : l.issues) lines.push_back(i.line);
  CHECK(lines == std::vector<int>{3, 4, 5, 6, 7, 8, 9});
  CHECK(l.issues[0].message.find("not valid JSON") != std::string::npos);
  CHECK(l.issues[2].message.find("'id'") != std::string::npos);
  CHECK(l.issues[3].message.find("'input'") != std::string::npos);
  CHECK(l.issues[5].message.find("duplicate id 'ok1'") != std::string::npos);
  CHECK(l.issues[0].format("tasks.jsonl") .rfind("tasks.jsonl:3: ", 0) == 0);
}

TEST_CASE("parse_tasks survives hostile input", "[tasks]") {
  std::string junk = "{\"id\":\"a\",\"input\":\"\xC3\x28\"}\n{{{{\n\x00\x01\n";
  junk += std::string(5000, '[') + "\n";
  auto l = parse_tasks(junk);
  CHECK(l.tasks.empty());
  CHECK(l.issues.size() >= 3);
}

TEST_CASE("load_tasks strict mode fails on any bad line, lenient mode skips", "[tasks]") {
  TempDir dir("tasks-load");
  write_text(dir / "t.jsonl", "{\"id\":\"a\",\"input\":\"x\"}\nbroken\n");
  auto lenient = load_tasks(dir / "t.jsonl", false);
  REQUIRE(lenient.ok());
  CHECK(lenient->tasks.size() == 1);
  CHECK(lenient->issues.size() == 1);
  auto strict = load_tasks(dir / "t.jsonl", true);
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.error().code == Errc::bad_request);
  REQUIRE(strict.error().detail.size() == 1);
  CHECK(strict.error().detail[0].find("t.jsonl:2:") != std::string::npos);
  CHECK(load_tasks(dir / "missing.jsonl", false).error().code == Errc::io_error);
}
