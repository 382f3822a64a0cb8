// Hostile configurations: YAML alias bombs and self-referencing anchors in a json_schema, deep
// JSON-text schemas, and paths whose bytes are not UTF-8 (issue 14, items 2 and 8).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

const std::string kLatin1Dir = "d\xe9j\xe0";  // "déjà" in Latin-1: not UTF-8

// A verify stage whose output.json_schema is `schema_yaml` (indented under json_schema:).
std::string pipeline_with_schema(const std::string& schema_yaml) {
  return "name: p\nstages:\n  - name: verify\n    model: laya\n    user: \"{{input}}\"\n"
         "    output:\n      json_schema:" + schema_yaml;
}

// Ten levels of ten aliases each: 10^10 nodes once expanded, 1.3 KB of text.
std::string alias_bomb() {
  std::string s = "\n        type: object\n        a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    s += "        a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) s += (k ? ", " : "") + prev;
    s += "]\n";
  }
  return s;
}

}  // namespace

TEST_CASE("yaml alias bomb in json_schema stops at the node limit with file:line:col", "[config][hostile]") {
  TempDir d("cfg-bomb");
  const auto f = d / "bomb.yaml";
  const std::string text = pipeline_with_schema(alias_bomb());
  CHECK(text.size() < 1500);
  write_text(f, text);
  const auto r = cfg::load_pipeline_file(f);
  INFO(dump(r));
  CHECK_FALSE(r.ok());
  // Reported once, at the schema (line 8, column 9), not once per expanded node.
  CHECK(errors(r) == std::vector<std::string>{diag(f, 8, 9,
      "stages[0].output.json_schema: more than 100000 nodes after YAML aliases are expanded")});
}

TEST_CASE("yaml alias inside its own anchor in json_schema stops at the depth limit", "[config][hostile]") {
  TempDir d("cfg-selfalias");
  const auto f = d / "self.yaml";
  write_text(f, pipeline_with_schema(" &s\n        type: object\n        properties: {x: *s}\n"));
  const auto r = cfg::load_pipeline_file(f);
  INFO(dump(r));
  CHECK_FALSE(r.ok());
  const auto errs = errors(r);
  REQUIRE(errs.size() == 1);
  // yaml-cpp accepts the cycle (the alias is the node itself); the walk stops at the depth limit.
  CHECK(errs[0].rfind(cfg::display_path(f) + ":", 0) == 0);
  CHECK(errs[0].find(": error: stages[0].output.json_schema: nested deeper than 64 levels") != std::string::npos);
}

TEST_CASE("json_schema given as JSON text nested 100000 deep is refused, not recursed", "[config][hostile]") {
  TempDir d("cfg-deepjson");
  const auto f = d / "deep.yaml";
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  write_text(f, pipeline_with_schema(" '{\"type\": \"object\", \"x\": " + deep + "}'\n"));
  const auto r = cfg::load_pipeline_file(f);
  CHECK_FALSE(r.ok());
  CHECK(errors(r) == std::vector<std::string>{diag(f, 7, 20,
      "stages[0].output.json_schema: nested deeper than 64 levels (an alias inside its own anchor?)")});
}

TEST_CASE("yaml aliases within the limits expand as before (a shared enum used twice)", "[config][hostile]") {
  TempDir d("cfg-alias-ok");
  const auto f = d / "ok.yaml";
  write_text(f, pipeline_with_schema(
                    "\n        type: object\n        properties:\n"
                    "          verdict: &v {type: string, enum: [pass, reject]}\n"
                    "          second: *v\n"));
  const auto r = cfg::load_pipeline_file(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto schema = nlohmann::json::parse(r.config.pipelines.at(0).stages.at(0).output.json_schema);
  CHECK(schema["properties"]["second"] == schema["properties"]["verdict"]);
}

TEST_CASE("paths are bytes: a config in a Latin-1 directory loads with its paths' bytes kept", "[config][bytes]") {
  TempDir d("cfg-latin1");
  const auto root = d.path() / kLatin1Dir;
  write_text(root / "profiles/m.gguf", "GGUF dummy");
  write_text(root / "profiles/kev.yaml", "model: m.gguf\n");
  write_text(root / "pipelines/.keep", "");
  write_text(root / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n");
  const auto r = cfg::load(root / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  REQUIRE(r.config.profiles.size() == 1);
  CHECK(r.config.profiles[0].name == "kev");
  CHECK(r.config.profiles[0].model.string().find(kLatin1Dir) != std::string::npos);
  CHECK(r.config.orch.state_dir.string().find(kLatin1Dir) != std::string::npos);
}

TEST_CASE("paths are bytes: a profile file named k<0xff>v.yaml needs a name: (check says where)", "[config][bytes]") {
  TempDir d("cfg-badstem");
  const auto f = write_profile(d, "k\xffv.yaml", "model: m.gguf\n");
  const auto r = cfg::load_profile_file(f);
  CHECK(errors(r) == std::vector<std::string>{diag(f, 1, 1,
      "profile name 'k\\xFFv' comes from the file name and must be letters, digits, '.', '_' or '-'; "
      "rename the file or set 'name:' in it")});
  write_text(f, "name: kev\nmodel: m.gguf\n");
  const auto named = cfg::load_profile_file(f);
  INFO(dump(named));
  REQUIRE(named.ok());
  CHECK(named.config.profiles.at(0).name == "kev");
}

TEST_CASE("paths are bytes: a pipeline file named with non-UTF-8 bytes needs a name:", "[config][bytes]") {
  TempDir d("cfg-badpipe");
  const auto f = d / "v\xe9rif.yaml";
  const std::string body = "stages:\n  - name: decide\n    model: kev\n    user: \"{{input}}\"\n";
  write_text(f, body);
  const auto r = cfg::load_pipeline_file(f);
  CHECK(errors(r) == std::vector<std::string>{diag(f, 1, 1,
      "pipeline name 'v\\xE9rif' must be UTF-8 text without control characters; it comes from the file "
      "name: rename the file or set 'name:' in it")});
  write_text(f, "name: verif\n" + body);
  const auto named = cfg::load_pipeline_file(f);
  INFO(dump(named));
  CHECK(named.ok());
}
