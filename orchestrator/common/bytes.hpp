// Bytes that need not be text: Linux paths and argv are any bytes but NUL, and child output and task
// data may be anything, while JSON must be UTF-8 and a terminal obeys control bytes. One rule per sink
// (docs/configuration.md, "Paths are bytes"):
//   JSON output (HTTP, --json, journals)  dump_json: bytes that are not UTF-8 become U+FFFD; never throws
//   machine-read state (argv to compare)  bytes_to_json / bytes_from_json: exact round trip
//   terminal                              printable: control characters and stray bytes as \xNN
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kevlaya {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the bytes there are not
// UTF-8 (overlong forms, surrogates, code points above U+10FFFF and truncated sequences included).
std::size_t utf8_seq_len(std::string_view s, std::size_t i);
// The same, except that a sequence valid so far but cut short by the end of `s` gives -1.
int utf8_seq_len_or_cut(std::string_view s, std::size_t i);

// Byte offset of the first invalid UTF-8 sequence, nullopt when `s` is all UTF-8.
std::optional<std::size_t> utf8_error(std::string_view s);

// JSON text of `j` (indent < 0: one line). Never throws: invalid UTF-8 becomes U+FFFD.
std::string dump_json(const nlohmann::json& j, int indent = -1);
// The same for ordered JSON (members in insertion order: a body relayed to a child).
std::string dump_json(const nlohmann::ordered_json& j, int indent = -1);

// `s` as a JSON value that survives a round trip: the string itself when it is UTF-8, else
// {"hex": "<every byte as two hex digits>"}.
nlohmann::json bytes_to_json(std::string_view s);
// The bytes of a value written by bytes_to_json; nullopt for anything else.
std::optional<std::string> bytes_from_json(const nlohmann::json& j);

// `s` safe to print on a terminal: ASCII control characters (\n and \t included), DEL, C1 controls,
// bidirectional overrides and bytes that are not UTF-8 are written as \xNN (or \u{NNNN}); the rest,
// including backslashes, is unchanged. For display only, not reversible.
std::string printable(std::string_view s);

}  // namespace kevlaya
