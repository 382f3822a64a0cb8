#include "cli/eval_scores.hpp"

#include <algorithm>

namespace kevlaya::cli {
namespace {

using nlohmann::json;

std::string var(const json& record, const char* key) {
  const auto& vars = record.value("vars", json::object());
  return vars.contains(key) && vars[key].is_string() ? vars[key].get<std::string>() : std::string();
}

std::string output_of(const json& attempt) {
  return attempt.contains("output") && attempt["output"].is_string() ? attempt["output"].get<std::string>() : "";
}

// The decision under review in a verify attempt: the decide output of the same round, else the
// task's `proposed` field (verify-only pipelines); "" when neither exists.
std::string reviewed_decision(const json& record, const json& verify_attempt) {
  const auto round = verify_attempt.value("round", 0);
  std::string decided;
  for (const auto& a : record.value("attempts", json::array()))
    if (a.value("role", "") == "decide" && a.value("round", -1) == round && a.value("valid", false))
      decided = output_of(a);  // the last valid one of that round is what the verifier saw
  return decided.empty() ? var(record, "proposed") : decided;
}

}  // namespace

json Ratio::to_json() const {
  return {{"hit", hit}, {"of", of}, {"rate", of ? json(rate()) : json(nullptr)}};
}

void DecisionScores::add(const std::string& scenario, const json& record) {
  const std::string expected = var(record, "expected");
  const auto& attempts = record.value("attempts", json::array());
  accepted.of += 1;
  accepted.hit += record.value("verdict", "") == "accepted";
  std::string first;
  for (const auto& a : attempts) {
    schema_valid.of += 1;
    schema_valid.hit += a.value("valid", false);
    const std::string role = a.value("role", "");
    if (role == "decide" && first.empty() && a.value("valid", false)) first = output_of(a);
    if (role != "verify" || !a.contains("verdict") || expected.empty()) continue;
    const std::string reviewed = reviewed_decision(record, a);
    if (reviewed.empty()) continue;
    Ratio& r = reviewed == expected ? false_reject : caught;
    r.of += 1;
    r.hit += a["verdict"] == "reject";
  }
  if (!first.empty()) ++first_answers_[scenario][first];
  if (expected.empty()) return;
  if (!first.empty()) {
    kev_correct.of += 1;
    kev_correct.hit += first == expected;
  }
  if (record.contains("decision") && record["decision"].is_string()) {
    pipeline_correct.of += 1;
    pipeline_correct.hit += record["decision"] == expected;
  }
}

void DecisionScores::finish() {
  consistency = {};
  for (const auto& [id, answers] : first_answers_) {
    int top = 0, all = 0;
    for (const auto& [answer, n] : answers) {
      top = std::max(top, n);
      all += n;
    }
    consistency.hit += top;
    consistency.of += all;
  }
}

json DecisionScores::to_json() const {
  return {{"pipeline_accuracy", pipeline_correct.to_json()}, {"kev_accuracy", kev_correct.to_json()},
          {"consistency", consistency.to_json()},            {"schema_valid", schema_valid.to_json()},
          {"laya_catch", caught.to_json()},                  {"laya_false_reject", false_reject.to_json()},
          {"accepted", accepted.to_json()}};
}

}  // namespace kevlaya::cli
