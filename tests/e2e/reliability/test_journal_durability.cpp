// Journal durability: `kevlaya-orch run` over 200 tasks is killed with SIGKILL at random points
// (during start-up, the decide batch, or while verified tasks are being journaled), resumed each
// time, and finally run to the end: every task appears exactly once, every line parses, and no
// child outlives its killed orchestrator.
#include <catch2/catch.hpp>

#include <signal.h>

#include <map>
#include <random>
#include <thread>

#include "harness.hpp"
#include "e2e/pipeline_run/fixture.hpp"

using namespace kevlaya::test;

namespace {

constexpr int kJournalTasks = 200;
constexpr int kKills = 3;

std::vector<std::string> run_argv(const RunProject& p, bool resume) {
  std::vector<std::string> a = {orch_binary().string(), "run", (p.dir / "pipelines/dv.yaml").string(),
                                "--config", (p.dir / "kevlaya.yaml").string(),
                                "--input-file", (p.dir / "tasks.jsonl").string(),
                                "--output", (p.dir / "out.jsonl").string()};
  if (resume) a.push_back("--resume");
  return a;
}

// Complete lines in the journal (a torn last line is not counted).
std::size_t journal_lines(const RunProject& p) {
  const std::string text = read_text(p.dir / "out.jsonl");
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("journal durability: kill -9 at random points of a 200-task run, resume, every task once",
          "[reliability][journal]") {
  // Laya always passes: one round per task, so the run is a few seconds.
  const auto pass = nlohmann::json::array(
      {{{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}}});
  RunProject p(pass, {{"kev", "--fake-token-ms 1"}, {"laya", "--fake-token-ms 1"}});
  std::vector<std::string> lines;
  for (int i = 0; i < kJournalTasks; ++i) lines.push_back(task_line("t" + std::to_string(i), "case " + std::to_string(i)));
  p.tasks("tasks.jsonl", lines);
  const std::string tag = p.dir.path().string();

  std::mt19937 rng(Catch::rngSeed());
  bool resume = false;
  for (int k = 0; k < kKills; ++k) {
    const std::size_t before = journal_lines(p);
    Proc run(run_argv(p, resume), p.dir / "run.log", {{"KEVLAYA_RELIABILITY_TAG", tag}});
    if (k == 0) {
      // Somewhere in start-up or the decide batch: nothing may be journaled yet.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<>(50, 400)(rng)));
    } else {
      // While verified tasks are being journaled: after a random number of new lines.
      const std::size_t target = before + static_cast<std::size_t>(std::uniform_int_distribution<>(1, 40)(rng));
      eventually([&] { return journal_lines(p) >= target || !run.running(); }, 60s);
    }
    const int rc = run.signal_and_wait(SIGKILL);
    INFO("kill " << k << ": rc " << rc << ", journal " << before << " -> " << journal_lines(p) << "\n" << run.log());
    CHECK((rc == 128 + SIGKILL || rc == 0));
    CHECK(journal_lines(p) >= before);  // nothing journaled is ever lost
    resume = true;
    // The children die with the orchestrator (PDEATHSIG): nothing of this run is left.
    CHECK(eventually([&] { return processes_with_env("KEVLAYA_RELIABILITY_TAG=" + tag).empty(); }, 5s));
  }

  Proc last(run_argv(p, true), p.dir / "run.log");
  const auto rc = last.wait_exit(120s);
  INFO(last.log());
  REQUIRE(rc);
  CHECK(*rc == 0);
  std::map<std::string, int> seen;
  for (const auto& rec : p.journal("out.jsonl")) {  // throws on a corrupt line
    CHECK((rec["verdict"] == "accepted" || rec["verdict"] == "rejected"));  // finished, not error
    ++seen[rec["id"].get<std::string>()];
  }
  CHECK(seen.size() == static_cast<std::size_t>(kJournalTasks));
  for (const auto& [id, n] : seen) {
    INFO(id);
    CHECK(n == 1);
  }
}
