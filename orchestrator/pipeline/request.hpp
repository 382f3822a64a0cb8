// Stage -> llama-server request: GBNF for `choices`, JSON schema via response_format (pure).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "config/config.hpp"
#include "pipeline/template.hpp"

namespace kevlaya::pipeline {

// `s` as a GBNF string literal: quotes, backslashes and control characters escaped, other
// UTF-8 passed through unchanged (llama.cpp's grammar parser decodes UTF-8 in literals).
std::string gbnf_literal(std::string_view s);

// `root ::= "a" | "b"` accepting exactly one of `choices`. Errors: no choices, an empty choice,
// a duplicate choice, or invalid UTF-8 (Errc::config_invalid).
Result<std::string> choices_grammar(const std::vector<std::string>& choices);

struct ChatMessage {
  std::string role;
  std::string content;
};

// Renders every message of `stage` with `ctx`; the first missing placeholder is the error.
Result<std::vector<ChatMessage>> render_messages(const config::Stage& stage, const TemplateContext& ctx);

// The `/v1/chat/completions` body: model, messages, temperature, top_p, seed, max_tokens,
// stream=false, plus `grammar` (choices) or `response_format` json_schema (schema). `seed`
// overrides the stage's (retries of invalid output use fresh seeds). constrain=false leaves the
// grammar/response_format out (eval measures what the constraint is worth). Ordered: the schema's
// properties reach llama-server in the order the pipeline writes them (its grammar follows it).
Result<nlohmann::ordered_json> chat_body(const config::Stage& stage, const std::vector<ChatMessage>& messages,
                                        std::optional<std::int64_t> seed, bool constrain = true);

}  // namespace kevlaya::pipeline
