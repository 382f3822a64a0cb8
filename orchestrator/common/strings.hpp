// Small string helpers shared across the targets.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya {

// `v`'s items with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// `items` written by `text(item)`, with `sep` between them ("" for none).
template <class Range, class Text>
std::string join(const Range& items, std::string_view sep, Text text) {
  std::string s;
  bool first = true;
  for (const auto& x : items) {
    if (!first) s += sep;
    s += text(x);
    first = false;
  }
  return s;
}

// `c` lowered if it is an ASCII letter (names, words and headers; not for user text).
inline char ascii_lower_char(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// `s` with ASCII letters lowered.
inline std::string ascii_lower(std::string s) {
  for (auto& c : s) c = ascii_lower_char(c);
  return s;
}

// Whether `s` contains `lower` (written in lower case), ASCII case ignored; no copy of `s`.
inline bool contains_ascii_ci(std::string_view s, std::string_view lower) {
  return std::search(s.begin(), s.end(), lower.begin(), lower.end(),
                     [](char a, char b) { return ascii_lower_char(a) == b; }) != s.end();
}

// `s` without its leading and trailing spaces and tabs.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace kevlaya
