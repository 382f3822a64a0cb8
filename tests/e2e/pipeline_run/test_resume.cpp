// The journal survives kill -9 and Ctrl-C: `--resume` finishes the rest with no task lost or run twice.
#include <catch2/catch.hpp>

#include <map>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

constexpr int kTasks = 8;

json resume_pass_script() {
  return json::array({{{"model", "kev"}, {"reply", "cache"}},
                      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "the strategy fits"})"}}});
}

// Starts a slow run in the background, waits for its first journal line, sends `signal`,
// and returns the run's exit status (from `wait`).
int interrupt_mid_run(const RunProject& p, const std::string& signal) {
  // The braces keep `$!` the pid of kevlaya-orch itself (not of a subshell running `cd && ...`).
  const std::string script = p.cd() + "{ " + p.orch() +
                             " run pipelines/dv.yaml --config kevlaya.yaml --input-file tasks.jsonl"
                             " --output out.jsonl > bg.log 2>&1 & pid=$!; i=0;"
                             " while [ ! -s out.jsonl ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done;"
                             " kill -" + signal + " $pid; wait $pid; echo \"rc=$?\"; }";
  auto r = run_command(script);
  const auto pos = r.output.rfind("rc=");
  REQUIRE(pos != std::string::npos);
  return std::stoi(r.output.substr(pos + 3));
}

// Every record parses; returns how many records each id has.
std::map<std::string, int> ids_in(const RunProject& p) {
  std::map<std::string, int> ids;
  for (const auto& rec : p.journal("out.jsonl")) {
    CHECK(rec["verdict"] == "accepted");
    ++ids[rec["id"].get<std::string>()];
  }
  return ids;
}

void check_resume_completes(const RunProject& p, std::size_t before) {
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl --resume");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("already in the journal") != std::string::npos);
  auto ids = ids_in(p);
  CHECK(ids.size() == static_cast<std::size_t>(kTasks));
  for (const auto& [id, n] : ids) CHECK(n == 1);  // none duplicated, none lost
  CHECK(p.journal("out.jsonl").size() == static_cast<std::size_t>(kTasks));
  CHECK(before < static_cast<std::size_t>(kTasks));
}

RunProject slow_project() {
  return RunProject(resume_pass_script(), {{"laya", "--fake-token-ms 40"}});
}

void write_tasks(const RunProject& p) {
  std::vector<std::string> lines;
  for (int i = 1; i <= kTasks; ++i) lines.push_back(task_line("t" + std::to_string(i), "case " + std::to_string(i)));
  p.tasks("tasks.jsonl", lines);
}

}  // namespace

TEST_CASE("journal: kill -9 mid-run, then --resume runs exactly the missing tasks") {
  auto p = slow_project();
  write_tasks(p);
  const int rc = interrupt_mid_run(p, "9");
  CHECK(rc == 128 + 9);
  const auto before = p.journal("out.jsonl").size();  // every fsync'ed line parses
  CHECK(before >= 1);
  check_resume_completes(p, before);
}

TEST_CASE("Ctrl-C: the run exits 130 with a valid journal and stops its children, --resume finishes") {
  auto p = slow_project();
  write_tasks(p);
  const int rc = interrupt_mid_run(p, "INT");
  INFO(kevlaya::test::read_text(p.dir / "bg.log"));
  CHECK(rc == 130);
  CHECK(kevlaya::test::read_text(p.dir / "bg.log").find("--resume") != std::string::npos);
  const auto before = p.journal("out.jsonl").size();
  CHECK(before >= 1);
  // Graceful stop: the children were stopped (state file entries gone, no leftovers to kill).
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl --resume");
  CHECK(r.output.find("leftover") == std::string::npos);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto ids = ids_in(p);
  CHECK(ids.size() == static_cast<std::size_t>(kTasks));
  for (const auto& [id, n] : ids) CHECK(n == 1);
}
