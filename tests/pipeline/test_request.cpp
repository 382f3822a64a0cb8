#include <catch2/catch.hpp>

#include "pipeline/request.hpp"

// A named namespace: its using-directives stay in this file in the unity build (KEVLAYA_UNITY).
namespace request_test {

using namespace kevlaya;
using namespace kevlaya::pipeline;
using json = nlohmann::ordered_json;  // chat_body keeps the members' order

namespace {
config::Stage decide_stage() {
  config::Stage s;
  s.name = "decide";
  s.role = config::StageRole::decide;
  s.model = "kev";
  s.messages = {{"system", "You pick a city."}, {"user", "{{input}} Options: {{candidates}}"}};
  s.sampling.temperature = 0.2;
  s.sampling.max_tokens = 16;
  s.output.choices = {"Paris", "Lyon"};
  return s;
}
}  // namespace

TEST_CASE("gbnf_literal escapes quotes, backslashes and control characters", "[request]") {
  CHECK(gbnf_literal("pass") == R"("pass")");
  CHECK(gbnf_literal("say \"hi\"") == R"("say \"hi\"")");
  CHECK(gbnf_literal("a\\b") == R"("a\\b")");
  CHECK(gbnf_literal("l1\nl2\r\t") == R"("l1\nl2\r\t")");
  CHECK(gbnf_literal(std::string("x\x01y", 3)) == R"("x\x01y")");
  CHECK(gbnf_literal("Zürich 東京") == "\"Zürich 東京\"");  // UTF-8 passes through
}

TEST_CASE("choices_grammar builds root alternatives", "[request]") {
  auto g = choices_grammar({"pass", "reject"});
  REQUIRE(g.ok());
  CHECK(*g == R"(root ::= "pass" | "reject")");
  auto one = choices_grammar({"only \"one\""});
  CHECK(*one == R"(root ::= "only \"one\"")");
}

TEST_CASE("choices_grammar rejects empty, duplicate and invalid UTF-8 choices", "[request]") {
  CHECK(choices_grammar({}).error().code == Errc::config_invalid);
  CHECK_FALSE(choices_grammar({"a", ""}).ok());
  CHECK(choices_grammar({"a", "a"}).error().message.find("twice") != std::string::npos);
  CHECK_FALSE(choices_grammar({std::string("\xC3\x28")}).ok());
}

TEST_CASE("chat_body for a choices stage carries messages, sampling and grammar", "[request]") {
  auto s = decide_stage();
  s.sampling.top_p = 0.9;
  TemplateContext ctx;
  ctx.input = "Where is the Louvre?";
  ctx.candidates = std::vector<std::string>{"Paris", "Lyon"};
  auto msgs = render_messages(s, ctx);
  REQUIRE(msgs.ok());
  auto b = chat_body(s, *msgs, 42);
  REQUIRE(b.ok());
  const json& j = *b;
  CHECK(j["model"] == "kev");
  CHECK(j["messages"].size() == 2);
  CHECK(j["messages"][1]["role"] == "user");
  CHECK(j["messages"][1]["content"] == "Where is the Louvre? Options: Paris, Lyon");
  CHECK(j["temperature"] == 0.2);
  CHECK(j["top_p"] == 0.9);
  CHECK(j["seed"] == 42);
  CHECK(j["max_tokens"] == 16);
  CHECK(j["stream"] == false);
  CHECK(j["grammar"] == R"(root ::= "Paris" | "Lyon")");
  CHECK_FALSE(j.contains("response_format"));
}

TEST_CASE("chat_body for a schema stage uses response_format json_schema", "[request]") {
  auto s = decide_stage();
  s.output.choices.clear();
  s.output.json_schema = R"({"type":"object","properties":{"verdict":{"enum":["pass","reject"]}}})";
  s.sampling.seed = 7;
  auto b = chat_body(s, {{"user", "hi"}}, std::nullopt);
  REQUIRE(b.ok());
  CHECK((*b)["response_format"]["type"] == "json_schema");
  CHECK((*b)["response_format"]["json_schema"]["schema"] == json::parse(s.output.json_schema));
  CHECK((*b)["seed"] == 7);
  CHECK_FALSE(b->contains("grammar"));
  CHECK_FALSE(b->contains("top_p"));
}

TEST_CASE("chat_body without seed anywhere omits it, bad schema is a config error", "[request]") {
  auto s = decide_stage();
  auto b = chat_body(s, {}, std::nullopt);
  CHECK_FALSE(b->contains("seed"));
  s.output.choices.clear();
  s.output.json_schema = "{not json";
  CHECK(chat_body(s, {}, std::nullopt).error().code == Errc::config_invalid);
}

TEST_CASE("render_messages names the stage and role on a missing placeholder", "[request]") {
  auto s = decide_stage();
  TemplateContext ctx;  // no candidates
  auto m = render_messages(s, ctx);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message.find("stage 'decide', user message") != std::string::npos);
}

TEST_CASE("chat_body sends a schema's properties in the order the stage writes them", "[request]") {
  // llama-server's grammar makes the model write the properties in the schema's order: a verifier
  // trained to answer {"reason", "verdict"} must not be forced into {"verdict", "reason"} (or back).
  auto s = decide_stage();
  s.output.choices.clear();
  s.output.json_schema = R"({"type":"object","properties":{"verdict":{"type":"string"},"reason":{"type":"string"}},)"
                         R"("required":["verdict","reason"]})";
  auto b = chat_body(s, {{"user", "hi"}}, std::nullopt);
  REQUIRE(b.ok());
  const auto text = b->dump();
  const auto verdict = text.find("\"verdict\":{");
  const auto reason = text.find("\"reason\":{");
  REQUIRE(verdict != std::string::npos);
  REQUIRE(reason != std::string::npos);
  CHECK(verdict < reason);
  s.output.json_schema = R"({"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"string"}}})";
  const auto swapped = chat_body(s, {{"user", "hi"}}, std::nullopt)->dump();
  CHECK(swapped.find("\"reason\":{") < swapped.find("\"verdict\":{"));
}

}  // namespace request_test
