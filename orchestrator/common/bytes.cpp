#include "common/bytes.hpp"

#include <cstdint>
#include <cstdio>

#include "common/hash.hpp"

namespace kevlaya {

namespace {

std::uint32_t decode(std::string_view s, std::size_t i, std::size_t n) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  return cp;
}

// Code points a terminal acts on rather than shows: C0, DEL, C1, and the bidirectional controls
// that reorder what follows them (so an id could hide its real text).
bool is_control(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

int utf8_seq_len_or_cut(std::string_view s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  int n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) { n = 3; lo = 0xA0; }        // no overlong 3-byte forms
  else if (c == 0xED) { n = 3; hi = 0x9F; }        // no surrogates
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) { n = 4; lo = 0x90; }        // no overlong 4-byte forms
  else if (c == 0xF4) { n = 4; hi = 0x8F; }        // nothing above U+10FFFF
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else return 0;
  for (int k = 1; k < n; ++k) {
    if (i + static_cast<std::size_t>(k) >= s.size()) return -1;
    const unsigned char b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return n;
}

std::size_t utf8_seq_len(std::string_view s, std::size_t i) {
  const int n = utf8_seq_len_or_cut(s, i);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

std::optional<std::size_t> utf8_error(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_seq_len(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dump_json(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::json bytes_to_json(std::string_view s) {
  if (!utf8_error(s)) return std::string(s);
  return nlohmann::json{{"hex", to_hex(reinterpret_cast<const unsigned char*>(s.data()), s.size())}};
}

std::optional<std::string> bytes_from_json(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_object() || j.size() != 1 || !j.contains("hex") || !j["hex"].is_string()) return std::nullopt;
  const auto& hex = j["hex"].get_ref<const std::string&>();
  if (hex.size() % 2 != 0) return std::nullopt;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_seq_len(s, i);
    char buf[16];
    if (n == 0) {  // a stray byte
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
      continue;
    }
    const std::uint32_t cp = decode(s, i, n);
    if (is_control(cp)) {
      if (cp < 0x80) std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace kevlaya
