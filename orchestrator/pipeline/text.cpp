#include "pipeline/text.hpp"

#include <cstdio>

namespace kevlaya::pipeline {

std::size_t utf8_length(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  return n;
}

std::string_view trim_ws(std::string_view s) {
  constexpr std::string_view ws = " \t\n\r\f\v";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string quote_for_message(std::string_view s, std::size_t max) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += s[i];
    }
  }
  if (s.size() > max) out += "...";
  return out + "'";
}

}  // namespace kevlaya::pipeline
