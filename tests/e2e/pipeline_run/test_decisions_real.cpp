// The committed tiny Kev and Laya (tools/decisions/models) on the real llama-server: a small
// `eval` over held-out scenarios (CI's version of tools/decisions/eval.sh). Guards that the models
// still load and answer schema-valid, that they decide right (thresholds far above chance, 25 %, and a
// little below what docs/decisions.md measures, so a change to the prompts, the chat template, the
// output constraint or the request path that breaks the decisions fails here), and that the prompt
// the server builds tokenizes like the training text (a handful of task-vocabulary tokens).
#include <catch2/catch.hpp>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

constexpr int kScenarios = 8;
constexpr int kRepeat = 3;
// Measured on these through `kevlaya-orch eval` (3 repeats): Kev 24/24, pipeline 24/24, Laya alone
// catches 24/24 wrong decisions and rejects 0/24 right ones (docs/decisions.md). A broken prompt,
// template, constraint or request path puts Kev near chance (25 %) and Laya at a constant or random
// verdict; a verify schema sent with its properties reordered makes Laya reject most right decisions.
constexpr double kMinAccuracy = 0.9;
constexpr double kMinPipeline = 0.9;
constexpr double kMinCatch = 0.9;
constexpr double kMaxFalseReject = 0.15;

struct DecisionsProject {
  TempDir dir{"decisions"};
  explicit DecisionsProject(const std::string& server) {
    write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: log\n");
    for (const std::string name : {"kev", "laya"})
      write_text(dir / ("profiles/" + name + ".yaml"),
                 "name: " + name + "\nbinary: " + server + "\nmodel: " +
                     (source_dir() / ("tools/decisions/models/" + name + ".gguf")).string() +
                     "\nngl: 0\nctx: 512\nparallel: 1\nextra_args: [\"-t\", \"1\"]\n");
    write_text(dir / "scenarios.jsonl", head("scenarios-heldout.jsonl", kScenarios));
    write_text(dir / "laya-scenarios.jsonl", head("laya-heldout.jsonl", 2 * kScenarios));
  }
  static std::string head(const std::string& file, int n) {
    std::istringstream in(read_text(source_dir() / "tools/decisions/scenarios" / file));
    std::string text;
    std::string line;
    for (int i = 0; i < n && std::getline(in, line); ++i) text += line + "\n";
    return text;
  }
  json eval(const std::string& pipeline = "pipelines/decide-verify.yaml",
            const std::string& scenarios = "scenarios.jsonl") const {
    auto r = run_command("cd " + dir.path().string() + " && { " + orch_binary().string() + " eval " +
                         (source_dir() / pipeline).string() + " --config kevlaya.yaml --scenarios " + scenarios +
                         " --repeat " + std::to_string(kRepeat) + " --json 2>stderr.txt; }");
    INFO(r.output << read_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output);
  }
};

}  // namespace

TEST_CASE("decisions: the trained Kev and Laya decide held-out scenarios on the real llama-server") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  DecisionsProject p(server);
  const json report = p.eval();
  const json& scores = report["profiles"][0]["scores"];
  INFO(scores.dump(2));
  CHECK(scores["schema_valid"]["rate"] == 1.0);  // the grammar keeps every output valid
  CHECK(scores["kev_accuracy"]["of"] == kScenarios * kRepeat);
  CHECK(scores["pipeline_accuracy"]["of"] == kScenarios * kRepeat);
  CHECK(scores["consistency"]["of"] == kScenarios * kRepeat);
  CHECK(scores["laya_catch"]["of"].get<int>() + scores["laya_false_reject"]["of"].get<int>() > 0);
  CHECK(scores["kev_accuracy"]["rate"].get<double>() >= kMinAccuracy);
  CHECK(scores["pipeline_accuracy"]["rate"].get<double>() >= kMinPipeline);
  CHECK(scores["consistency"]["rate"].get<double>() >= kMinAccuracy);
}

TEST_CASE("decisions: the trained Laya passes right and rejects wrong held-out decisions on the real llama-server") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  DecisionsProject p(server);
  const json report = p.eval("tools/decisions/scenarios/verify-only.yaml", "laya-scenarios.jsonl");
  const json& scores = report["profiles"][0]["scores"];
  INFO(scores.dump(2));
  CHECK(scores["schema_valid"]["rate"] == 1.0);
  REQUIRE(scores["laya_catch"]["of"].get<int>() > 0);
  REQUIRE(scores["laya_false_reject"]["of"].get<int>() > 0);
  CHECK(scores["laya_catch"]["rate"].get<double>() >= kMinCatch);
  CHECK(scores["laya_false_reject"]["rate"].get<double>() <= kMaxFalseReject);
}

TEST_CASE("decisions: the real llama-server's prompt tokenizes like the models' training text") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  DecisionsProject p(server);
  auto r = run_command("cd " + p.dir.path().string() + " && " + orch_binary().string() + " run " +
                       (source_dir() / "pipelines/decide-verify.yaml").string() +
                       " --config kevlaya.yaml --input-file scenarios.jsonl --output out.jsonl 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("accuracy vs expected: pipeline ") != std::string::npos);
  std::istringstream in(read_text(p.dir / "out.jsonl"));
  int calls = 0;
  for (std::string line; std::getline(in, line);) {
    const json rec = json::parse(line);
    for (const auto& a : rec["attempts"]) {
      ++calls;
      CHECK(a["valid"] == true);
      // The fixed prompt text is a few whole tokens of the task vocabulary: ~15 tokens plus the
      // situation's (up to ~30) instead of ~250. More means the server's prompt no longer matches the
      // training text (a changed pipeline prompt or chat template): retrain with tools/decisions/train.sh.
      if (a["round"] == 1) CHECK(a["tokens"]["prompt"].get<int>() <= 64);  // later rounds add free-text feedback
    }
  }
  CHECK(calls >= 2 * kScenarios);
}
