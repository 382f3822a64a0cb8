// `kevlaya-orch eval`: decision stability over repeated runs, verifier pass rate, --min-stability.
#include <catch2/catch.hpp>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

// "always cache" is scripted (stable); anything else is the stand-in's seed-dependent pick.
json eval_script() {
  return json::array({{{"model", "kev"}, {"contains", "always cache"}, {"reply", "cache"}},
                      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "ok"})"}}});
}

const json& scenario(const json& profile, const std::string& id) {
  for (const auto& s : profile["scenarios"])
    if (s["id"] == id) return s;
  FAIL("no scenario " << id);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("eval: stability is the share of the most common decision, --min-stability gates the exit code") {
  RunProject p(eval_script(), {}, dv_pipeline(), standin_binary().string(), {"kev", "laya", "kev2"});
  p.tasks("sc.jsonl", {task_line("stable", "always cache this"), task_line("varies", "a situation")});

  auto r = run_command(p.cd() + "{ " + p.orch() +
                       " eval pipelines/dv.yaml --config kevlaya.yaml --scenarios sc.jsonl --repeat 8 --json 2>err.txt; }");
  INFO(r.output << read_text(p.dir / "err.txt"));
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.output);
  REQUIRE(j["profiles"].size() == 1);
  const auto& stable = scenario(j["profiles"][0], "stable");
  CHECK(stable["runs"] == 8);
  CHECK(stable["decisions"] == json{{"cache", 8}});
  CHECK(stable["stability"] == 1.0);
  CHECK(stable["verify_pass_rate"] == 1.0);
  CHECK(stable["invalid_outputs"] == 0);
  const auto& varies = scenario(j["profiles"][0], "varies");
  CHECK(varies["runs"] == 8);
  CHECK(varies["decisions"].size() > 1);  // different seeds, different picks
  CHECK(varies["stability"].get<double>() < 1.0);
  // Stage-major batching: 16 tasks on two models still cost two loads.
  CHECK(j["profiles"][0]["summary"]["switches"] == 2);

  auto strict = p.eval("--scenarios sc.jsonl --repeat 8 --min-stability 0.99");
  INFO(strict.output);
  CHECK(strict.exit_code == 1);
  CHECK(strict.output.find("below --min-stability") != std::string::npos);
  CHECK(p.eval("--scenarios sc.jsonl --repeat 8 --min-stability 0.1").exit_code == 0);
}

TEST_CASE("eval --profiles compares decide profiles side by side in one table") {
  RunProject p(eval_script(), {}, dv_pipeline(), standin_binary().string(), {"kev", "laya", "kev2"});
  p.tasks("sc.jsonl", {task_line("stable", "always cache this")});
  auto r = p.eval("--scenarios sc.jsonl --repeat 3 --profiles kev,kev2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto header = r.output.find("decide = kev ");
  REQUIRE(header != std::string::npos);
  const auto eol = r.output.find('\n', header);
  CHECK(r.output.substr(header, eol - header).find("decide = kev2") != std::string::npos);  // same line
  CHECK(r.output.find("server binary: kev2 -> ") != std::string::npos);
  CHECK(p.eval("--scenarios sc.jsonl --repeat 3 --profiles kev,nope").exit_code == 1);
}

TEST_CASE("eval scores decisions against expected answers: Kev alone, the pipeline and Laya's rates") {
  const json script = json::array(
      {{{"model", "kev"}, {"contains", "use escalate"}, {"reply", "escalate"}},
       {{"model", "kev"}, {"contains", "disk full"}, {"reply", "cache"}},
       {{"model", "kev"}, {"contains", "transient"}, {"reply", "retry"}},
       {{"model", "laya"}, {"contains", "Chosen strategy: cache"},
        {"reply", R"({"verdict": "reject", "reason": "a human must act; use escalate"})"}},
       {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}}});
  RunProject p(script);
  auto line = [](const std::string& id, const std::string& input, const std::string& expected) {
    return json{{"id", id}, {"input", input}, {"candidates", {"cache", "retry", "escalate", "abort"}},
                {"expected", expected}}.dump();
  };
  p.tasks("sc.jsonl", {line("disk", "the disk full again", "escalate"), line("blip", "a transient blip", "retry")});
  auto r = run_command(p.cd() + "{ " + p.orch() + " eval pipelines/dv.yaml --config kevlaya.yaml --scenarios sc.jsonl" +
                       " --repeat 2 --constraint both --json 2>err.txt; }");
  const std::string err = read_text(p.dir / "err.txt");
  INFO(r.output << err);
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.output);
  REQUIRE(j["profiles"].size() == 2);
  CHECK(j["profiles"][0]["constrained"] == true);
  CHECK(j["profiles"][1]["constrained"] == false);
  const auto& s = j["profiles"][0]["scores"];
  CHECK(s["pipeline_accuracy"]["hit"] == 4);  // the reject's reason sent Kev to the right answer
  CHECK(s["kev_accuracy"]["hit"] == 2);       // alone, Kev got only the blip right
  CHECK(s["kev_accuracy"]["of"] == 4);
  CHECK(s["laya_catch"]["hit"] == 2);
  CHECK(s["laya_catch"]["of"] == 2);
  CHECK(s["laya_false_reject"]["hit"] == 0);
  CHECK(s["laya_false_reject"]["of"] == 4);
  CHECK(s["consistency"]["rate"] == 1.0);
  CHECK(s["schema_valid"]["rate"] == 1.0);
  CHECK(err.find("pipeline acc") != std::string::npos);  // the per-variant table
  CHECK(err.find("100% (4/4)") != std::string::npos);
}

TEST_CASE("eval --variants names an unknown profile in its error") {
  RunProject p(eval_script());
  p.tasks("sc.jsonl", {task_line("a", "always cache this")});
  auto r = p.eval("--scenarios sc.jsonl --variants q8=kev:nope");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("unknown profile 'nope' in --variants") != std::string::npos);
  auto bad = p.eval("--scenarios sc.jsonl --variants justaname");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("expected LABEL=DECIDE_PROFILE:VERIFY_PROFILE") != std::string::npos);
}
