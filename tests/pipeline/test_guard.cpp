#include <catch2/catch.hpp>

#include "pipeline/guard.hpp"
#include "pipeline/schema.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;
using nlohmann::json;

namespace {
config::Stage choices_stage(config::StageRole role, std::vector<std::string> choices) {
  config::Stage s;
  s.name = role == config::StageRole::verify ? "verify" : "decide";
  s.role = role;
  s.output.choices = std::move(choices);
  return s;
}
config::Stage schema_stage(config::StageRole role, const std::string& schema) {
  config::Stage s;
  s.name = "verify";
  s.role = role;
  s.output.json_schema = schema;
  return s;
}
const char* kVerdictSchema = R"({"type":"object","required":["verdict"],
  "properties":{"verdict":{"type":"string","enum":["pass","reject"]},"reason":{"type":"string","maxLength":200}},
  "additionalProperties":false})";
}  // namespace

TEST_CASE("guard choices: trimmed text must equal a choice exactly", "[guard]") {
  auto s = choices_stage(config::StageRole::decide, {"Paris", "Lyon"});
  auto g = guard(s, "  Paris\n");
  REQUIRE(g.valid);
  CHECK(g.output == "Paris");
  CHECK(g.verdict == Verdict::none);
  for (const char* bad : {"paris", "Paris.", "Paris Lyon", "Marseille"}) {
    INFO(bad);
    auto b = guard(s, bad);
    CHECK_FALSE(b.valid);
    CHECK(b.invalid_reason.find("not one of the choices") != std::string::npos);
  }
}

TEST_CASE("guard verify choices: pass_value passes, other choices reject with feedback", "[guard]") {
  auto s = choices_stage(config::StageRole::verify, {"pass", "reject", "wrong_city"});
  CHECK(guard(s, "pass").verdict == Verdict::pass);
  auto r = guard(s, "wrong_city");
  REQUIRE(r.valid);
  CHECK(r.verdict == Verdict::reject);
  CHECK(r.feedback.find("wrong_city") != std::string::npos);
  s.pass_value = "ok";
  s.output.choices = {"ok", "no"};
  CHECK(guard(s, "ok").verdict == Verdict::pass);
}

TEST_CASE("guard verify JSON: verdict and reason fields", "[guard]") {
  auto s = schema_stage(config::StageRole::verify, kVerdictSchema);
  auto p = guard(s, R"({"verdict":"pass","reason":"fine"})");
  REQUIRE(p.valid);
  CHECK(p.verdict == Verdict::pass);
  CHECK(p.reason == std::optional<std::string>("fine"));
  auto r = guard(s, R"({"verdict":"reject","reason":"the Louvre is in Paris"})");
  REQUIRE(r.valid);
  CHECK(r.verdict == Verdict::reject);
  CHECK(r.feedback == "the Louvre is in Paris");
  auto v = r.values();
  CHECK(v.fields["verdict"] == "reject");
  CHECK(v.reason == std::optional<std::string>("the Louvre is in Paris"));
}

TEST_CASE("guard JSON: no coercion, schema violations are invalid", "[guard]") {
  auto s = schema_stage(config::StageRole::verify, kVerdictSchema);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"verdict":"maybe"})", "expected one of"},
      {R"({"reason":"x"})", "missing required field 'verdict'"},
      {R"({"verdict":"pass","extra":1})", "unexpected field 'extra'"},
      {R"({"verdict":true})", "expected type"},
      {R"(["pass"])", "expected type"},
      {"```json\n{\"verdict\":\"pass\"}\n```", "not valid JSON"},
      {R"({"verdict":"pass"} trailing)", "not valid JSON"},
  };
  for (const auto& [text, why] : cases) {
    INFO(text);
    auto g = guard(s, text);
    CHECK_FALSE(g.valid);
    CHECK(g.invalid_reason.find(why) != std::string::npos);
  }
}

TEST_CASE("guard verify JSON without a verdict field is invalid", "[guard]") {
  auto s = schema_stage(config::StageRole::verify, R"({"type":"object"})");
  auto g = guard(s, R"({"answer":"yes"})");
  CHECK_FALSE(g.valid);
  CHECK(g.invalid_reason.find("verdict") != std::string::npos);
  auto d = schema_stage(config::StageRole::decide, R"({"type":"object"})");
  CHECK(guard(d, R"({"answer":"yes"})").valid);  // decide stages need no verdict
}

TEST_CASE("guard free-text verify reads the first word", "[guard]") {
  config::Stage s;
  s.role = config::StageRole::verify;
  auto p = guard(s, "PASS.");
  REQUIRE(p.valid);
  CHECK(p.verdict == Verdict::pass);
  auto r = guard(s, "reject: the answer names the wrong city");
  REQUIRE(r.valid);
  CHECK(r.verdict == Verdict::reject);
  CHECK(r.feedback == "the answer names the wrong city");
  CHECK_FALSE(guard(s, "I think it is fine").valid);
}

TEST_CASE("degenerate outputs are invalid with a reason", "[guard]") {
  config::Stage free;
  CHECK(guard(free, "").invalid_reason == "empty output");
  CHECK(guard(free, " \n\t ").invalid_reason == "empty output");
  CHECK(guard(free, std::string("ok\x01", 3)).invalid_reason.find("control character 0x01") != std::string::npos);
  CHECK(guard(free, "bad \xC3\x28 utf8").invalid_reason.find("invalid UTF-8 at byte 4") != std::string::npos);
  CHECK(guard(free, "surrogate \xED\xA0\x80").invalid_reason.find("invalid UTF-8") != std::string::npos);
  CHECK(guard(free, "overlong \xC0\xAF").invalid_reason.find("invalid UTF-8") != std::string::npos);
  std::string loop = "The answer is";
  for (int i = 0; i < 40; ++i) loop += " yes";
  loop += " y";  // cut mid-unit by max_tokens
  CHECK(guard(free, loop).invalid_reason.find("loop") != std::string::npos);
  CHECK(guard(free, "Paris\n\tLyon, Zürich 東京").valid);  // \n, \t and UTF-8 are fine
  CHECK(guard(free, "a short ha ha ha ha answer").valid);
  CHECK(guard(free, std::string(30, '-') + " table").valid);
}

TEST_CASE("schema validator: types without coercion", "[schema]") {
  auto type = [](const char* t) { return json{{"type", t}}; };
  CHECK_FALSE(validate(json(3), type("integer")));
  CHECK_FALSE(validate(json(3.0), type("integer")));
  CHECK(validate(json(3.5), type("integer")));
  CHECK(validate(json("3"), type("number")));
  CHECK(validate(json("true"), type("boolean")));
  CHECK_FALSE(validate(json(true), type("boolean")));
  CHECK_FALSE(validate(json(nullptr), json{{"type", {"string", "null"}}}));
  CHECK(validate(json(1), json{{"type", {"string", "null"}}}));
}

TEST_CASE("schema validator: strings, numbers, arrays and nested paths", "[schema]") {
  json s = json::parse(R"({"type":"object","properties":{
      "name":{"type":"string","minLength":2,"maxLength":3},
      "score":{"type":"number","minimum":0,"maximum":1},
      "tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string"}}}})");
  CHECK_FALSE(validate(json::parse(R"({"name":"東京","score":0.5,"tags":["a"]})"), s));  // 2 code points
  CHECK(*validate(json::parse(R"({"name":"a"})"), s) == "$.name: string shorter than minLength 2");
  CHECK(validate(json::parse(R"({"name":"abcd"})"), s)->find("maxLength") != std::string::npos);
  CHECK(validate(json::parse(R"({"score":1.5})"), s)->find("above maximum") != std::string::npos);
  CHECK(validate(json::parse(R"({"tags":[]})"), s)->find("minItems") != std::string::npos);
  CHECK(validate(json::parse(R"({"tags":["a","b","c"]})"), s)->find("maxItems") != std::string::npos);
  CHECK(*validate(json::parse(R"({"tags":["a",2]})"), s) == "$.tags[1]: expected type \"string\", got 2");
  CHECK_FALSE(validate(json::parse(R"({"other":1})"), s));  // additionalProperties defaults to allowed
}

TEST_CASE("schema validator: additionalProperties schema, const, boolean schemas", "[schema]") {
  json s = json::parse(R"({"type":"object","additionalProperties":{"type":"integer"},"properties":{"k":{"const":"v"}}})");
  CHECK_FALSE(validate(json::parse(R"({"k":"v","n":1})"), s));
  CHECK(validate(json::parse(R"({"k":"w"})"), s));
  CHECK(validate(json::parse(R"({"n":"x"})"), s));
  CHECK(validate(json(1), json(false)));
  CHECK_FALSE(validate(json(1), json(true)));
}

TEST_CASE("unsupported_keywords lists what the validator ignores", "[schema]") {
  json s = json::parse(R"({"type":"object","title":"t","properties":{"a":{"type":"string","pattern":"x"}},
                            "items":{"$ref":"#/x"}})");
  CHECK(unsupported_keywords(s) == std::vector<std::string>{"$ref", "pattern"});
}
