// Output guard: decides whether a model's text is a usable stage output (pure). Nothing is
// coerced or repaired; anything doubtful is `invalid` with a reason, and the runner retries it.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "pipeline/template.hpp"

namespace kevlaya::pipeline {

enum class Verdict { none, pass, reject };  // none: not a verify stage

struct GuardResult {
  bool valid = false;
  std::string invalid_reason;          // set when !valid
  std::string output;                  // the choice, the free text, or compact JSON
  std::optional<nlohmann::json> json;  // json_schema stages
  std::optional<std::string> reason;   // JSON field `reason` (string), when present
  Verdict verdict = Verdict::none;     // verify stages
  std::string feedback;                // on reject: the reason, or what the verifier answered

  StageValues values() const;  // what later templates may reference
};

// Why `text` is degenerate (invalid UTF-8, empty, control characters other than \n and \t,
// or ending in an endless repetition of a short pattern), or nullopt if it is not.
std::optional<std::string> degenerate(std::string_view text);

// Guards `text` (the assistant message content) against `stage`'s constraint:
//   choices: the trimmed text equals one choice exactly;
//   json_schema: the trimmed text parses as JSON and validates against the schema;
//   none: any non-degenerate text.
// Verify stages also yield a verdict: JSON field `verdict`, the chosen choice, or the free
// text's first word, compared with stage.pass_value (anything else is a reject).
GuardResult guard(const config::Stage& stage, std::string_view text);

}  // namespace kevlaya::pipeline
