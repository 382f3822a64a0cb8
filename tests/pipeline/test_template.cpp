#include <catch2/catch.hpp>

#include "pipeline/template.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;

namespace {
TemplateContext sample() {
  TemplateContext c;
  c.input = "Where is the Louvre?";
  c.candidates = std::vector<std::string>{"Paris", "Lyon"};
  c.vars["city"] = "Paris";
  StageValues d;
  d.output = "Paris";
  d.reason = "it is in Paris";
  d.fields["confidence"] = "0.9";
  c.stages["decide"] = d;
  return c;
}
}  // namespace

TEST_CASE("render substitutes input, candidates, vars and stage values", "[template]") {
  auto c = sample();
  auto r = render("Q: {{input}} Options: {{ candidates }}. City={{vars.city}} "
                  "Answer={{decide.output}} because {{decide.reason}} ({{decide.confidence}})",
                  c);
  REQUIRE(r.ok());
  CHECK(*r == "Q: Where is the Louvre? Options: Paris, Lyon. City=Paris Answer=Paris because it is in Paris (0.9)");
}

TEST_CASE("render formats candidates as bullets or JSON", "[template]") {
  auto c = sample();
  CHECK(render("{{candidates.bullets}}", c).value() == "- Paris\n- Lyon");
  CHECK(render("{{candidates.json}}", c).value() == R"(["Paris","Lyon"])");
}

TEST_CASE("render: feedback is empty on round 1 and set after a reject", "[template]") {
  auto c = sample();
  CHECK(render("[{{feedback}}][{{verify.feedback}}]", c).value() == "[][]");
  c.feedback = "wrong city";
  c.feedback_by_stage["verify"] = "wrong city";
  CHECK(render("[{{feedback}}][{{verify.feedback}}]", c).value() == "[wrong city][wrong city]");
}

TEST_CASE("render: a missing value is an error, not an empty string", "[template]") {
  auto c = sample();
  for (const char* t : {"{{vars.country}}", "{{verify.output}}", "{{decide.nope}}", "{{nonsense}}",
                        "{{candidates.table}}", "{{vars.}}"}) {
    auto r = render(t, c);
    INFO(t);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_request);
  }
  c.candidates.reset();
  auto r = render("{{candidates}}", c);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("no candidates") != std::string::npos);
  c.stages["decide"].reason.reset();
  CHECK_FALSE(render("{{decide.reason}}", c).ok());
}

TEST_CASE("render rejects unterminated and empty placeholders", "[template]") {
  auto c = sample();
  auto r = render("hello {{input", c);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("never closed") != std::string::npos);
  CHECK_FALSE(render("{{  }}", c).ok());
}

TEST_CASE("render leaves text without placeholders and single braces alone", "[template]") {
  auto c = sample();
  CHECK(render("", c).value().empty());
  CHECK(render("json: {\"a\": 1} }", c).value() == "json: {\"a\": 1} }");
  CHECK(render("{{input}}{{input}}", c).value() == "Where is the Louvre?Where is the Louvre?");
}

TEST_CASE("render does not re-expand placeholders inside substituted values", "[template]") {
  auto c = sample();
  c.input = "{{vars.city}}";
  CHECK(render("{{input}}", c).value() == "{{vars.city}}");
}

TEST_CASE("placeholders lists names in order", "[template]") {
  auto p = placeholders("a {{input}} b {{ decide.output }} {{vars.x}}");
  REQUIRE(p.ok());
  CHECK(*p == std::vector<std::string>{"input", "decide.output", "vars.x"});
  CHECK_FALSE(placeholders("{{input").ok());
}
