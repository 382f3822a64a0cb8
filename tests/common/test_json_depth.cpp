// The JSON nesting-depth limit (common/bounded_json.hpp) and the lines it guards: task lines of
// `run --input-file` (a 100,000-deep field crashed `run`, exit 139) and journal lines.
#include <catch2/catch.hpp>

#include "common/bounded_json.hpp"
#include "pipeline/journal.hpp"
#include "pipeline/tasks.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;
using namespace kevlaya::test;

namespace {

std::string arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("parse_json_bounded: accepts the limit, refuses one level more while parsing", "[json]") {
  CHECK(parse_json_bounded(arrays(kMaxJsonDepth)).ok());
  auto over = parse_json_bounded(arrays(kMaxJsonDepth + 1));
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == Errc::bad_request);
  CHECK(over.error().message == json_depth_message());
  CHECK(over.error().message.find(std::to_string(kMaxJsonDepth)) != std::string::npos);
  // Objects count as levels too; brackets inside strings do not.
  std::string objects;
  for (std::size_t i = 0; i < kMaxJsonDepth + 1; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  CHECK_FALSE(parse_json_bounded(objects).ok());
  CHECK(parse_json_bounded("[\"" + std::string(100000, '[') + "\"]").ok());
  // Siblings do not add up: depth is nesting, not count.
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += arrays(100) + ",";
  wide += "1]";
  CHECK(parse_json_bounded(wide).ok());
}

TEST_CASE("parse_json_bounded: a 1,000,000-deep document is refused without a deep tree (no crash)", "[json]") {
  auto r = parse_json_bounded(arrays(1000000));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == json_depth_message());
}

TEST_CASE("parse_json_bounded: syntax errors keep nlohmann's position message, trailing bytes are errors", "[json]") {
  auto bad = parse_json_bounded("{\"a\":");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("not valid JSON: ", 0) == 0);
  CHECK(bad.error().message.find("line 1") != std::string::npos);
  CHECK_FALSE(parse_json_bounded("{} {}").ok());
  auto v = parse_json_bounded(R"({"a":[1,2,{"b":null}],"c":"\u00e9"})");
  REQUIRE(v.ok());
  CHECK((*v)["a"][2]["b"].is_null());
}

TEST_CASE("a task line nested 100,000 deep is skipped naming the depth limit (run --input-file crash)", "[tasks]") {
  const std::string text = "{\"id\":\"deep\",\"input\":\"x\",\"extra\":" + arrays(100000) + "}\n"
                           "{\"id\":\"ok\",\"input\":\"y\",\"extra\":" + arrays(10) + "}\n";
  auto l = parse_tasks(text);
  REQUIRE(l.tasks.size() == 1);
  CHECK(l.tasks[0].id == "ok");
  REQUIRE(l.issues.size() == 1);
  CHECK(l.issues[0].line == 1);
  CHECK(l.issues[0].message == json_depth_message());
}

TEST_CASE("a journal line nested too deep is an error naming the limit, not a torn line", "[journal]") {
  TempDir dir("journal-deep");
  const auto path = dir / "run.jsonl";
  const std::string good = R"({"id":"a","verdict":"accepted"})";
  const std::string deep = "{\"id\":\"b\",\"x\":" + arrays(100000) + "}";
  for (const std::string& text : {good + "\n" + deep + "\n" + good + "\n", good + "\n" + deep + "\n"}) {
    write_text(path, text);
    auto j = Journal::open(path, Journal::Mode::resume);
    REQUIRE_FALSE(j.ok());
    CHECK(j.error().message.find("line 2") != std::string::npos);
    CHECK(j.error().message.find(json_depth_message()) != std::string::npos);
    CHECK(read_text(path) == text);  // nothing cut away
  }
}

TEST_CASE("error_message reads the error bodies of OpenAI, llama-server and the door, nothing else", "[json]") {
  const auto msg = [](const char* text) { return error_message(nlohmann::json::parse(text)); };
  CHECK(msg(R"({"error":{"message":"unknown model","type":"invalid_request_error","code":404}})") == "unknown model");
  CHECK(msg(R"({"error":"Not Found"})") == "Not Found");
  CHECK_FALSE(msg(R"({"error":{"code":500}})"));
  CHECK_FALSE(msg(R"({"error":{"message":42}})"));
  CHECK_FALSE(msg(R"({"message":"no error member"})"));
  CHECK_FALSE(msg(R"(["error"])"));
  CHECK_FALSE(error_message(nlohmann::json::parse("{", nullptr, false)));  // discarded: not an object
}
