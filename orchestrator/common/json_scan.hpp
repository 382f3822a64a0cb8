// A validating pass over JSON text that builds nothing. The door reads three top-level fields of a
// model call (model, stream, keep_alive) and forwards the body as sent; building nlohmann's tree
// for that cost ~4 ns a byte (its lexer copies every string character by character): 0.3 ms of
// CPU for a 70 KiB agent conversation, on every call. This pass checks the same grammar (RFC 8259,
// UTF-8 strings, finite numbers, one document; nlohmann::json::accept's answer) and the nesting
// bound at ~0.3 ns a byte, and hands back the top-level object's members as spans of the text.
#pragma once

#include <cstddef>
#include <forward_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/bounded_json.hpp"
#include "common/error.hpp"

namespace kevlaya {

// One member of the top-level object: its key (decoded: escapes resolved) and its value's text.
// Both are views: a key without escapes is a span of the text, one with them is kept decoded in
// its JsonScan (no string per key: the door scans every model call and every answer's timings).
struct JsonMember {
  std::string_view key;
  std::string_view value;  // a span of the scanned text: `"..."`, a number, `{...}`, ...
};

// The top-level value's members when it is an object; `object` false for any other JSON value.
// Move-only: its members may point into `decoded`.
struct JsonScan {
  JsonScan() = default;
  JsonScan(JsonScan&&) = default;
  JsonScan& operator=(JsonScan&&) = default;
  bool object = false;
  std::vector<JsonMember> members;  // in text order; a repeated key appears twice (the last wins)
  std::forward_list<std::string> decoded;  // the keys that had escapes, decoded (nodes stay put;
                                           // unlike a deque, empty costs no allocation)
};

// Checks that `text` is one JSON document nesting at most `max_depth` containers, without building
// it. Errors are Errc::bad_request: "not valid JSON: ... at byte N" or json_depth_message().
Result<JsonScan> scan_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// scan_json for the one value at the start of `text`; what follows the value is not read.
Result<JsonScan> scan_json_prefix(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// The text of a scanned JSON string (`"..."`, quotes included, already valid), escapes resolved.
std::string json_string(std::string_view quoted);

}  // namespace kevlaya
