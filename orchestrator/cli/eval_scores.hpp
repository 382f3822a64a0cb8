// Decision quality from pipeline records (pure, for tests): when a task carries the known right
// answer (`expected`), how often Kev is right alone (round 1) and after the decide->verify loop,
// how stable its answers are, how often outputs were schema-valid, and how well Laya judges.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace kevlaya::cli {

struct Ratio {
  int hit = 0;
  int of = 0;
  double rate() const { return of ? static_cast<double>(hit) / of : 0.0; }
  nlohmann::json to_json() const;  // {"hit", "of", "rate"}; rate null when of == 0
};

struct DecisionScores {
  Ratio pipeline_correct;  // final decision == expected (tasks with `expected` and a decision)
  Ratio kev_correct;       // Kev's first valid answer == expected
  Ratio consistency;       // per scenario: the modal first answer's count over that scenario's runs
  Ratio schema_valid;      // valid outputs over all model calls
  Ratio caught;            // verify calls on a wrong decision that rejected it
  Ratio false_reject;      // verify calls on a right decision that rejected it
  Ratio accepted;          // tasks that ended accepted
  // Adds one task record (run/eval journal format). `scenario` groups repeats for consistency.
  void add(const std::string& scenario, const nlohmann::json& record);
  // Closes the consistency tallies; call once after the last add().
  void finish();
  nlohmann::json to_json() const;

 private:
  std::map<std::string, std::map<std::string, int>> first_answers_;  // scenario -> answer -> count
};

}  // namespace kevlaya::cli
