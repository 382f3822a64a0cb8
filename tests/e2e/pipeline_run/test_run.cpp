// `kevlaya-orch run` end to end against the stand-in server (real processes, scripted answers).
#include <catch2/catch.hpp>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

namespace {

// Kev answers "retry" for the full disk until Laya's feedback is in its prompt, then "escalate".
json disk_script() {
  return json::array({
      {{"model", "kev"}, {"contains", "cannot free disk space"}, {"reply", "escalate"}},
      {{"model", "kev"}, {"contains", "disk is full"}, {"reply", "retry"}},
      {{"model", "kev"}, {"reply", "cache"}},
      {{"model", "laya"}, {"contains", "Chosen strategy: retry"},
       {"reply", R"({"verdict": "reject", "reason": "retrying cannot free disk space"})"}},
      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}},
  });
}

std::vector<std::string> stages_of(const json& rec) {
  std::vector<std::string> out;
  for (const auto& a : rec["attempts"]) out.push_back(a["stage"].get<std::string>() + ":" + a.value("output", "?"));
  return out;
}

}  // namespace

TEST_CASE("a verify reject sends the verifier's feedback back to decide, which then passes") {
  RunProject p(disk_script());
  p.tasks("tasks.jsonl", {task_line("disk", "The disk is full and writes fail.")});
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 1);
  const auto& rec = recs[0];
  CHECK(rec["verdict"] == "accepted");
  CHECK(rec["rounds"] == 2);
  CHECK(rec["decision"] == "escalate");
  // The verifier's answers as it wrote them (verdict first), not re-sorted.
  CHECK(stages_of(rec) == std::vector<std::string>{"decide:retry", "verify:{\"verdict\":\"reject\",\"reason\":\"retrying cannot free disk space\"}",
                                                    "decide:escalate", "verify:{\"verdict\":\"pass\",\"reason\":\"fits\"}"});
  CHECK(rec["attempts"][1]["verdict"] == "reject");
  CHECK(rec["attempts"][0]["prompt_hash"] != rec["attempts"][2]["prompt_hash"]);  // feedback changed it
  CHECK(rec["attempts"][0]["timings"].contains("predicted_n"));
  CHECK(rec["attempts"][0]["tokens"]["completion"].get<int>() >= 1);
  CHECK(rec["error"].is_null());
  CHECK_FALSE(rec["switches"].empty());
}

TEST_CASE("invalid output is retried with new seeds, then the task ends as error with the raw text kept") {
  RunProject p(json::array({{{"model", "kev"}, {"reply", "maybe later"}},
                            {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "ok"})"}}}));
  p.tasks("tasks.jsonl", {task_line("a", "anything"), task_line("b", "something else")});
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 2);  // some tasks ended in error
  auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 2);
  for (const auto& rec : recs) {
    CHECK(rec["verdict"] == "error");
    CHECK(rec["error"]["code"] == "invalid_output");
    REQUIRE(rec["attempts"].size() == 3);  // 1 + max_invalid_retries
    std::set<std::int64_t> seeds;
    for (const auto& a : rec["attempts"]) {
      CHECK(a["raw"] == "maybe later");
      CHECK(a["valid"] == false);
      CHECK_FALSE(a.contains("output"));  // never coerced into a choice
      seeds.insert(a["seed"].get<std::int64_t>());
    }
    CHECK(seeds.size() == 3);
  }
}

TEST_CASE("malformed input lines are reported with their line numbers and skipped, or fatal with --strict") {
  RunProject p(disk_script());
  p.tasks("tasks.jsonl", {task_line("t1", "one"), "{not json", task_line("t3", "three"), R"({"id": "t4"})",
                          task_line("t1", "duplicate id")});
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("tasks.jsonl:2:") != std::string::npos);
  CHECK(r.output.find("tasks.jsonl:4:") != std::string::npos);
  CHECK(r.output.find("tasks.jsonl:5:") != std::string::npos);
  auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 2);
  CHECK(recs[0]["id"] == "t1");
  CHECK(recs[1]["id"] == "t3");

  auto strict = p.run("--input-file tasks.jsonl --output strict.jsonl --strict");
  INFO(strict.output);
  CHECK(strict.exit_code == 1);
  CHECK(strict.output.find("tasks.jsonl:2:") != std::string::npos);
  CHECK(p.journal("strict.jsonl").empty());
}

TEST_CASE("stage-major batching switches about twice for N tasks, task-major twice per task") {
  RunProject p(disk_script());
  // One child at a time (with no GPU budget the two tiny models would otherwise stay co-resident).
  p.orch_config("residency: rotate\n");
  std::vector<std::string> lines;
  for (int i = 1; i <= 6; ++i) lines.push_back(task_line("t" + std::to_string(i), "case " + std::to_string(i)));
  lines[2] = task_line("t3", "The disk is full again.");  // rejected once: one extra round
  p.tasks("tasks.jsonl", lines);

  auto stage = p.run_stdout("--input-file tasks.jsonl --output stage.jsonl --json");
  INFO(stage.output);
  REQUIRE(stage.exit_code == 0);
  auto task = p.run_stdout("--input-file tasks.jsonl --output task.jsonl --json --order task-major");
  INFO(task.output);
  REQUIRE(task.exit_code == 0);
  const auto s = json::parse(stage.output), t = json::parse(task.output);
  CHECK(s["accepted"] == 6);
  CHECK(t["accepted"] == 6);
  CHECK(s["switches"] == 2 + 2);      // kev, laya, + kev/laya again for the one retry round
  // kev, laya per task, + the retry round. Task-major alternates, so scheduling.switch_ahead starts
  // kev after the last verify: a switch no call of the run uses, and not counted as the run's.
  CHECK(t["switches"] == 2 * 6 + 2);
  // Every switch is attributed to the task whose acquire caused it.
  int attributed = 0;
  for (const auto& rec : p.journal("stage.jsonl")) attributed += static_cast<int>(rec["switches"].size());
  CHECK(attributed == s["switches"].get<int>());
  // Each task's own stages stay in order whatever the batching.
  for (const auto& rec : p.journal("stage.jsonl")) {
    const auto st = stages_of(rec);
    for (std::size_t i = 0; i < st.size(); ++i) CHECK(st[i].rfind(i % 2 ? "verify:" : "decide:", 0) == 0);
  }
}

TEST_CASE("a child crash mid-call is retried once after the restart, a crash loop ends tasks in error, the run goes on") {
  SECTION("one crash: retried, every task accepted") {
    RunProject p(disk_script(), {{"kev", "--fake-crash-after 2"}});
    p.tasks("tasks.jsonl", {task_line("a", "1"), task_line("b", "2"), task_line("c", "3"), task_line("d", "4")});
    auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    int retried = 0;
    auto recs = p.journal("out.jsonl");
    REQUIRE(recs.size() == 4);
    for (const auto& rec : recs) {
      CHECK(rec["verdict"] == "accepted");
      for (const auto& a : rec["attempts"]) retried += a.contains("crash_retry");
    }
    CHECK(retried == 1);
  }
  SECTION("every call crashes: tasks end as error, the run finishes with exit 2") {
    RunProject p(disk_script(), {{"kev", "--fake-crash-after 0"}});
    p.tasks("tasks.jsonl", {task_line("a", "1"), task_line("b", "2")});
    auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
    INFO(r.output);
    REQUIRE(r.exit_code == 2);
    auto recs = p.journal("out.jsonl");
    REQUIRE(recs.size() == 2);
    for (const auto& rec : recs) {
      CHECK(rec["verdict"] == "error");
      CHECK(rec["error"]["code"] == "child_crashed");
    }
  }
}

TEST_CASE("exit codes: 0 all finished (any verdict), 1 the run cannot start") {
  // Laya always rejects: tasks end `rejected`, which is a finished task (exit 0).
  RunProject p(json::array({{{"model", "kev"}, {"reply", "abort"}},
                            {{"model", "laya"}, {"reply", R"({"verdict": "reject", "reason": "no"})"}}}),
               {}, dv_pipeline(2));
  auto ok = p.run("--input 'a situation' --candidates cache,abort --output one.jsonl");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  auto recs = p.journal("one.jsonl");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0]["verdict"] == "rejected");
  CHECK(recs[0]["rounds"] == 2);
  CHECK(ok.output.find("server binary: kev -> " + standin_binary().string()) != std::string::npos);

  CHECK(p.run("--input x --output one.jsonl").exit_code == 1);  // journal exists: needs --resume
  auto missing = run_command(p.cd() + p.orch() + " run pipelines/none.yaml --config kevlaya.yaml --input x 2>&1");
  CHECK(missing.exit_code == 1);
  kevlaya::test::write_text(p.dir / "profiles/laya.yaml", "name: laya\nctx: -5\n");
  auto bad = p.run("--input x");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("laya.yaml") != std::string::npos);
}
