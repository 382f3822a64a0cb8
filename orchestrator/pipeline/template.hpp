// Prompt templates: `{{placeholder}}` substitution for pipeline stage messages (pure).
// A placeholder without a value is an error, never an empty string — except feedback, which is
// legitimately empty on the first round.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::pipeline {

// What an earlier stage produced in this task (for `{{<stage>.output}}` and friends).
struct StageValues {
  std::string output;                         // the choice, the free text, or compact JSON
  std::optional<std::string> reason;          // JSON field `reason`, when present
  std::map<std::string, std::string> fields;  // top-level JSON fields (strings unquoted)
};

struct TemplateContext {
  std::string input;
  std::optional<std::vector<std::string>> candidates;
  std::map<std::string, std::string> vars;   // task vars: {{vars.NAME}}
  std::map<std::string, StageValues> stages; // by stage name
  std::map<std::string, std::string> feedback_by_stage;  // verify stage -> last reject reason
  std::string feedback;                       // latest reject reason; "" on round 1
};

// Renders `tmpl`. Placeholders (whitespace inside the braces is ignored):
//   {{input}}  {{candidates}} (comma-separated)  {{candidates.bullets}} ("- a\n- b")
//   {{candidates.json}}  {{feedback}}  {{<stage>.feedback}}  {{vars.NAME}}
//   {{<stage>.output}}  {{<stage>.reason}}  {{<stage>.<json field>}}
// Errors (Errc::bad_request): unterminated or empty placeholder, unknown name, missing value.
Result<std::string> render(std::string_view tmpl, const TemplateContext& ctx);

// The placeholder names used by `tmpl` in order (for static checks), or an error if malformed.
Result<std::vector<std::string>> placeholders(std::string_view tmpl);

}  // namespace kevlaya::pipeline
