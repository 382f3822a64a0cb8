// DecisionScores (cli/eval_scores.hpp): accuracy, consistency, schema-valid and Laya's rates from
// journal records, computed by hand here.
#include <catch2/catch.hpp>

#include "cli/eval_scores.hpp"

using nlohmann::json;
using kevlaya::cli::DecisionScores;

namespace {

json attempt(const std::string& role, int round, const std::string& output, bool valid = true) {
  json a = {{"role", role}, {"round", round}, {"valid", valid}};
  if (!valid) return a;
  a["output"] = output;
  if (role == "verify") a["verdict"] = output;
  return a;
}

// A record whose attempts are (role, round, output) in order; `decision` is the final decide output.
json record(const std::string& expected, const std::string& verdict, const std::string& decision, json attempts) {
  json r = {{"verdict", verdict}, {"attempts", std::move(attempts)}, {"vars", {{"expected", expected}}}};
  if (!decision.empty()) r["decision"] = decision;
  return r;
}

}  // namespace

TEST_CASE("eval scores: a caught wrong first answer counts for the pipeline, not for Kev alone") {
  DecisionScores s;
  s.add("a", record("escalate", "accepted", "escalate",
                    {attempt("decide", 1, "retry"), attempt("verify", 1, "reject"), attempt("decide", 2, "escalate"),
                     attempt("verify", 2, "pass")}));
  s.finish();
  CHECK(s.pipeline_correct.hit == 1);
  CHECK(s.kev_correct.hit == 0);
  CHECK(s.kev_correct.of == 1);
  CHECK(s.caught.hit == 1);  // round 1 reviewed "retry" (wrong) and rejected it
  CHECK(s.caught.of == 1);
  CHECK(s.false_reject.hit == 0);  // round 2 reviewed "escalate" (right) and passed it
  CHECK(s.false_reject.of == 1);
  CHECK(s.accepted.hit == 1);
}

TEST_CASE("eval scores: consistency is the modal first answer's share per scenario") {
  DecisionScores s;
  for (const char* first : {"cache", "cache", "retry"})
    s.add("a", record("cache", "accepted", first, {attempt("decide", 1, first)}));
  s.add("b", record("abort", "accepted", "abort", {attempt("decide", 1, "abort")}));
  s.finish();
  CHECK(s.consistency.hit == 3);  // 2 of 3 for a, 1 of 1 for b
  CHECK(s.consistency.of == 4);
  CHECK(s.kev_correct.hit == 3);
}

TEST_CASE("eval scores: invalid outputs lower the schema-valid rate and are not Kev's answer") {
  DecisionScores s;
  s.add("a", record("abort", "accepted", "abort",
                    {attempt("decide", 1, "", false), attempt("decide", 1, "abort"), attempt("verify", 1, "pass")}));
  s.finish();
  CHECK(s.schema_valid.hit == 2);
  CHECK(s.schema_valid.of == 3);
  CHECK(s.kev_correct.hit == 1);
}

TEST_CASE("eval scores: a verify-only task judges its proposed decision") {
  DecisionScores s;
  json r = record("retry", "rejected", "", {attempt("verify", 1, "reject")});
  r["vars"]["proposed"] = "abort";
  s.add("v", r);
  json ok = record("retry", "rejected", "", {attempt("verify", 1, "reject")});
  ok["vars"]["proposed"] = "retry";
  s.add("w", ok);
  s.finish();
  CHECK(s.caught.hit == 1);
  CHECK(s.caught.of == 1);
  CHECK(s.false_reject.hit == 1);
  CHECK(s.false_reject.of == 1);
  CHECK(s.pipeline_correct.of == 0);  // no decide stage: no decision to score
}

TEST_CASE("eval scores: tasks without expected answers score only validity and consistency") {
  DecisionScores s;
  json r = {{"verdict", "accepted"}, {"decision", "cache"}, {"attempts", {attempt("decide", 1, "cache")}}};
  s.add("a", r);
  s.finish();
  CHECK(s.pipeline_correct.of == 0);
  CHECK(s.kev_correct.of == 0);
  CHECK(s.schema_valid.hit == 1);
  CHECK(s.consistency.hit == 1);
  CHECK(s.to_json()["pipeline_accuracy"]["rate"].is_null());
}
