// Constrained answers: the literal alternatives of a simple GBNF grammar, and a minimal valid
// instance of a JSON schema. Choices (alternatives, enums, booleans) are picked by the digest,
// so different prompts / adapters / seeds visibly pick differently.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace standin {

// Literal alternatives of `root` in grammars shaped like
//   root ::= "a" | "b" | ...        (also: parentheses, literal concatenations, one rule hop).
// nullopt when the grammar has another shape the stand-in does not model.
// Throws std::invalid_argument("failed to parse grammar") when there is no root rule.
std::optional<std::vector<std::string>> grammar_alternatives(const std::string& gbnf);

// A minimal instance of `schema` (objects with their required properties, or all when
// `required` is absent; enums/const; strings; numbers; booleans; arrays of minItems;
// local $ref; anyOf/oneOf/allOf take a branch). Serialized compactly.
std::string schema_instance(const nlohmann::json& schema, std::uint64_t digest);

}  // namespace standin
