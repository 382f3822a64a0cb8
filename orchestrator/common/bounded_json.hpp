// JSON from outside (request bodies, task lines, journal lines, model output) is parsed with a
// nesting-depth limit enforced while parsing: nlohmann's parser is iterative, but copying,
// dump() and comparison recurse once per level, so a 100,000-deep array overflowed the stack when
// a body was re-serialized. A too-deep document is refused before any deep tree exists.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya {

// The one limit on JSON nesting (arrays + objects) accepted from outside; docs/security.md.
// Deep enough for OpenAI bodies with nested tool/JSON schemas, shallow enough that every
// recursive walk over a value stays far from the stack's end.
inline constexpr std::size_t kMaxJsonDepth = 128;

// "JSON nests deeper than 128 levels (the limit)" — the sentence every refusal uses.
std::string json_depth_message(std::size_t max_depth = kMaxJsonDepth);

// Parses `text` as one JSON document (all of it: a NUL byte is refused, not taken for the end),
// refusing nesting deeper than `max_depth` while parsing.
// Errors are Errc::bad_request: "not valid JSON: ..." or json_depth_message().
Result<nlohmann::json> parse_json_bounded(std::string_view text,
                                          std::size_t max_depth = kMaxJsonDepth);

// The same, keeping the members' order: for a body relayed to a child, whose JSON schemas
// llama-server turns into grammars in the order the properties are written.
Result<nlohmann::ordered_json> parse_ordered_json_bounded(std::string_view text,
                                                          std::size_t max_depth = kMaxJsonDepth);

// An error body's message as OpenAI's, llama-server's and the door's errors carry it
// ({"error": {"message": "..."}} or {"error": "..."}); nullopt for any other JSON.
std::optional<std::string> error_message(const nlohmann::json& body);

}  // namespace kevlaya
