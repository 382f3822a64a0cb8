// Issue 15: a pipeline run over REST reports the same switches as the same task through `run`
// (the executor subscribes to the supervisor's events in both; the door used to take the one
// switch listener, so REST records said "switches": []).
#include <catch2/catch.hpp>

#include <signal.h>

#include "e2e/pipeline_run/fixture.hpp"
#include "support/process.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

json script() {
  return json::array({
      {{"model", "kev"}, {"contains", "cannot free disk space"}, {"reply", "escalate"}},
      {{"model", "kev"}, {"reply", "retry"}},
      {{"model", "laya"}, {"contains", "Chosen strategy: retry"},
       {"reply", R"({"verdict": "reject", "reason": "retrying cannot free disk space"})"}},
      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}},
  });
}

// (from, to, ok) of each switch of a record: the timings differ from run to run.
std::vector<std::string> switches_of(const json& rec) {
  std::vector<std::string> out;
  for (const auto& s : rec["switches"])
    out.push_back(s["from"].get<std::string>() + "->" + s["to"].get<std::string>() + (s["ok"].get<bool>() ? "" : " failed"));
  return out;
}

}  // namespace

TEST_CASE("a pipeline run over REST returns the same switches as the same task through run") {
  RunProject p(script());
  const std::string task = task_line("disk", "The disk is full and writes fail.");
  p.tasks("tasks.jsonl", {task});
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 1);
  const auto via_run = switches_of(recs[0]);
  CHECK_FALSE(via_run.empty());

  Serve serve(p.dir / "kevlaya.yaml");
  write_text(p.dir / "task.json", task);
  auto post = run_command("curl -sS --max-time 120 -H 'Content-Type: application/json' --data @" +
                          (p.dir / "task.json").string() + " http://127.0.0.1:" + std::to_string(serve.port()) +
                          "/v1/pipelines/dv/runs");
  INFO(post.output);
  INFO(serve.proc().log());
  const auto rec = json::parse(post.output, nullptr, false);
  REQUIRE(rec.is_object());
  REQUIRE(rec.contains("switches"));
  CHECK(rec["verdict"] == recs[0]["verdict"]);
  CHECK(switches_of(rec) == via_run);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
