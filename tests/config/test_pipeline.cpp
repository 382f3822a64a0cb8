#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

cfg::LoadResult load_text(const TempDir& d, const std::string& text, std::filesystem::path* file = nullptr) {
  const auto f = d / "p.yaml";
  write_text(f, text);
  if (file) *file = f;
  return cfg::load_pipeline_file(f);
}

}  // namespace

TEST_CASE("pipeline: stages, roles, sampling and outputs are read", "[config]") {
  TempDir d("cfg");
  const auto r = load_text(d, R"(name: dv
max_rounds: 2
stages:
  - name: decide
    model: kev
    messages:
      - {role: system, content: "You decide."}
      - {role: user, content: "{{input}} / {{candidates}} / {{ feedback }} / {{vars.region}}"}
    sampling: {temperature: 0, top_p: 0.9, seed: 42, max_tokens: 4}
    output: {choices: [cache, retry]}
    max_invalid_retries: 1
  - name: check
    role: verify
    model: laya
    system: "Check."
    user: "{{decide.output}} {{decide.reason}}"
    output:
      json_schema:
        type: object
        properties:
          verdict: {type: string, enum: [ok, no]}
          n: {type: integer, minimum: 1}
          flag: {type: boolean, default: false}
          label: {type: string, const: "123"}
    pass_value: ok
)");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& pl = r.config.pipelines.at(0);
  CHECK(pl.name == "dv");
  CHECK(pl.max_rounds == 2);
  REQUIRE(pl.stages.size() == 2);
  const auto& a = pl.stages[0];
  CHECK(a.role == cfg::StageRole::decide);
  CHECK(a.messages.size() == 2);
  CHECK(a.messages[1].role == "user");
  CHECK(a.sampling.temperature == 0.0);
  CHECK(a.sampling.top_p == std::optional<double>(0.9));
  CHECK(a.sampling.seed == std::optional<std::int64_t>(42));
  CHECK(a.sampling.max_tokens == 4);
  CHECK(a.output.choices == std::vector<std::string>{"cache", "retry"});
  CHECK(a.max_invalid_retries == 1);
  const auto& b = pl.stages[1];
  CHECK(b.role == cfg::StageRole::verify);
  CHECK(b.messages.size() == 2);
  CHECK(b.messages[0].role == "system");
  CHECK(b.pass_value == "ok");
  const auto schema = nlohmann::json::parse(b.output.json_schema);
  CHECK(schema["properties"]["n"]["minimum"] == 1);
  CHECK(schema["properties"]["flag"]["default"] == false);
  CHECK(schema["properties"]["label"]["const"] == "123");  // quoted stays a string
  CHECK(schema["properties"]["verdict"]["enum"] == nlohmann::json::array({"ok", "no"}));
}

TEST_CASE("pipeline: sampling defaults to temperature 0.1", "[config]") {
  TempDir d("cfg");
  const auto r = load_text(d, "stages:\n  - {name: decide, model: kev, user: \"{{input}}\"}\n");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.pipelines[0].name == "p");
  CHECK(r.config.pipelines[0].stages[0].sampling.temperature == 0.1);
  CHECK(r.config.pipelines[0].max_rounds == 3);
}

TEST_CASE("pipeline: an unknown placeholder is an error at its own line", "[config]") {
  TempDir d("cfg");
  std::filesystem::path f;
  const auto r = load_text(d, R"(stages:
  - name: decide
    model: kev
    user: |
      Situation: {{input}}
      Options: {{choices}}
)", &f);
  INFO(dump(r));
  CHECK(formatted(r) == std::vector<std::string>{diag(
      f, 6, 16, "unknown placeholder '{{choices}}' in stage 'decide' (did you mean '{{candidates}}'?)")});
}

TEST_CASE("pipeline: a placeholder of a later stage is an error", "[config]") {
  TempDir d("cfg");
  std::filesystem::path f;
  const auto r = load_text(d, R"(stages:
  - name: decide
    model: kev
    user: "{{input}} {{verify.output}}"
  - name: verify
    model: laya
    user: "{{decide.output}}"
)", &f);
  INFO(dump(r));
  CHECK(errors(r) == std::vector<std::string>{diag(
      f, 4, 22, "placeholder '{{verify.output}}' in stage 'decide' refers to stage 'verify', "
                "which does not run before it")});
}

TEST_CASE("pipeline: choices and json_schema together conflict", "[config]") {
  TempDir d("cfg");
  std::filesystem::path f;
  const auto r = load_text(d, R"(stages:
  - name: decide
    model: kev
    user: "{{input}}"
    output:
      choices: [a]
      json_schema: {type: object}
)", &f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 6, 7, "stages[0].output: set either 'choices' or 'json_schema', not both")));
}

TEST_CASE("pipeline: structural problems are all reported", "[config]") {
  TempDir d("cfg");
  std::filesystem::path f;
  const auto r = load_text(d, R"(max_rounds: 0
stages:
  - name: verify
    model: laya
    output: {choices: [yes, no]}
  - name: verify
    modle: kev
    user: "{{input"
)", &f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 1, 13, "max_rounds must be between 1 and 100, got 0")));
  CHECK(has_diag(r, diag(f, 3, 5, "stage 'verify' has no messages (set 'messages' or 'system'/'user')")));
  CHECK(has_diag(r, diag(f, 3, 5, "verify stage 'verify': pass_value 'pass' is not one of its choices")));
  CHECK(has_diag(r, diag(f, 7, 5, "unknown key 'modle' in stages[1] (did you mean 'model'?)")));
  CHECK(has_diag(r, diag(f, 6, 5, "duplicate stage name 'verify' (first at line 3)")));
  CHECK(has_diag(r, diag(f, 8, 12, "unterminated placeholder: '{{' without '}}'")));
}

TEST_CASE("pipeline: json_schema may be given as JSON text", "[config]") {
  TempDir d("cfg");
  const auto r = load_text(d, "stages:\n  - name: s\n    model: m\n    user: x\n    output:\n"
                              "      json_schema: '{\"type\": \"object\"}'\n");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.pipelines[0].stages[0].output.json_schema == R"({"type":"object"})");
  CHECK(r.config.pipelines[0].stages[0].role == cfg::StageRole::other);
}

TEST_CASE("pipeline: a json_schema keeps its properties in the order they are written", "[config]") {
  // The order is what llama-server's grammar makes the model write: a YAML mapping or JSON text
  // read into a sorted map would turn {verdict, reason} into {reason, verdict}.
  TempDir d("cfg");
  const auto r = load_text(d, R"(stages:
  - name: decide
    model: kev
    user: "{{input}}"
    output:
      json_schema:
        type: object
        properties:
          verdict: {type: string, enum: [pass, reject]}
          reason: {type: string}
        required: [verdict, reason]
  - name: other
    model: kev
    user: "{{input}}"
    output:
      json_schema: '{"type": "object", "properties": {"zeta": {}, "alpha": {}}}'
)");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& yaml_schema = r.config.pipelines.at(0).stages.at(0).output.json_schema;
  CHECK(yaml_schema.find("\"verdict\"") < yaml_schema.find("\"reason\""));
  CHECK(yaml_schema.find("\"type\"") < yaml_schema.find("\"properties\""));
  const auto& text_schema = r.config.pipelines.at(0).stages.at(1).output.json_schema;
  CHECK(text_schema.find("\"zeta\"") < text_schema.find("\"alpha\""));
}
