// Small text helpers for model output: UTF-8 checks, trimming, safe quoting in messages (pure).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.hpp"

namespace kevlaya::pipeline {

// Number of code points in valid UTF-8 (what JSON Schema's minLength/maxLength count).
std::size_t utf8_length(std::string_view s);

// Strips ASCII whitespace (space, \t, \n, \r, \f, \v) at both ends.
std::string_view trim_ws(std::string_view s);

// At most `max` bytes of `s` for an error message, with control bytes escaped as \xHH.
std::string quote_for_message(std::string_view s, std::size_t max = 40);

}  // namespace kevlaya::pipeline
