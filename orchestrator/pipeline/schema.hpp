// A small JSON Schema validator for the subset pipelines use (pure). No coercion: "3" is not a
// number, 1.5 is not an integer, "true" is not a boolean.
// Supported: type (name or list), enum, const, properties, required, additionalProperties
// (bool or schema), items, minItems, maxItems, minLength, maxLength (code points), minimum,
// maximum. Other keywords are ignored (llama-server's grammar still enforces them while
// generating); unsupported_keywords() lists them and `check` warns of them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevlaya::pipeline {

// The first violation as "path: problem" (path like $.items[2].name), or nullopt if valid.
std::optional<std::string> validate(const nlohmann::json& value, const nlohmann::json& schema);

// Keywords in `schema` (recursively) that validate() ignores, e.g. "pattern" or "$ref".
std::vector<std::string> unsupported_keywords(const nlohmann::json& schema);

}  // namespace kevlaya::pipeline
