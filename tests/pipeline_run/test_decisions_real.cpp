// The committed tiny Kev and Laya (tools/decisions/models) on the real llama-server: a small
// `eval` over held-out scenarios (CI's version of tools/decisions/eval.sh). Guards that the models
// still load, answer schema-valid, score well above chance, and that the prompt the server builds
// is the one they were trained on.
#include <catch2/catch.hpp>

#include "pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

constexpr int kScenarios = 8;  // two per strategy: held-out scenarios alternate labels
constexpr int kRepeat = 3;

struct DecisionsProject {
  TempDir dir{"decisions"};
  explicit DecisionsProject(const std::string& server) {
    write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: log\n");
    for (const std::string name : {"kev", "laya"})
      write_text(dir / ("profiles/" + name + ".yaml"),
                 "name: " + name + "\nbinary: " + server + "\nmodel: " +
                     (source_dir() / ("tools/decisions/models/" + name + ".gguf")).string() +
                     "\nngl: 0\nctx: 512\nparallel: 1\n");
    std::istringstream in(read_text(source_dir() / "tools/decisions/scenarios/scenarios-heldout.jsonl"));
    std::string text;
    std::string line;
    for (int i = 0; i < kScenarios && std::getline(in, line); ++i) text += line + "\n";
    write_text(dir / "scenarios.jsonl", text);
  }
  json eval() const {
    auto r = run_command("cd " + dir.path().string() + " && { " + orch_binary().string() + " eval " +
                         (source_dir() / "pipelines/decide-verify.yaml").string() +
                         " --config kevlaya.yaml --scenarios scenarios.jsonl --repeat " + std::to_string(kRepeat) +
                         " --json 2>stderr.txt; }");
    INFO(r.output << read_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output);
  }
};

}  // namespace

TEST_CASE("decisions: the trained Kev and Laya decide held-out scenarios on the real llama-server") {
  const auto server = real_llama_server();
  if (server.empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set");
  DecisionsProject p(server);
  const json report = p.eval();
  const json& scores = report["profiles"][0]["scores"];
  INFO(scores.dump(2));
  CHECK(scores["schema_valid"]["rate"] == 1.0);  // the grammar keeps every output valid
  CHECK(scores["kev_accuracy"]["of"] == kScenarios * kRepeat);
  // Chance is 25%: a model that no longer loads its vocabulary or lost its training lands there.
  CHECK(scores["kev_accuracy"]["rate"].get<double>() >= 0.6);
  CHECK(scores["pipeline_accuracy"]["rate"].get<double>() >= scores["kev_accuracy"]["rate"].get<double>() - 0.2);
}
