// Small string helpers shared across the targets.
#pragma once
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

// `s` with ASCII letters lowered (names, words and headers; not for user text).
inline std::string ascii_lower(std::string s) {
  for (auto& c : s) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return s;
}

// `s` without its leading and trailing spaces and tabs.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace kevlaya
