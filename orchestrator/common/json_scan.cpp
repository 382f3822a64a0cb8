#include "common/json_scan.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace kevlaya {
namespace {

// Bytes that may stand for themselves inside a string: printable ASCII but `"` and `\`.
constexpr std::array<bool, 256> plain_table() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
  return t;
}
constexpr auto kPlain = plain_table();

bool in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// The first byte from `p` that is not plain, 16 bytes per step while they all are (GCC's vector
// extensions: SSE2 on x86-64, NEON on arm64): strings are most of an agent's request.
const unsigned char* skip_plain(const unsigned char* p, const unsigned char* end) {
  using Bytes16 = unsigned char __attribute__((vector_size(16)));
  while (end - p >= 16) {
    Bytes16 v;
    std::memcpy(&v, p, sizeof v);
    const auto stop = (v == '"') | (v == '\\') | (v < 0x20) | (v >= 0x80);
    std::uint64_t half[2];
    std::memcpy(half, &stop, sizeof half);
    if (half[0] | half[1]) break;
    p += 16;
  }
  while (p < end && kPlain[*p]) ++p;
  return p;
}

class Scanner {
 public:
  Scanner(std::string_view text, std::size_t max_depth)
      : begin_(reinterpret_cast<const unsigned char*>(text.data())), p_(begin_), end_(begin_ + text.size()),
        max_(max_depth) {}

  // `whole`: the text is one document; else the value at its start, and what follows is not read.
  Result<JsonScan> run(bool whole) {
    if (end_ - p_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) p_ += 3;  // a BOM, as nlohmann
    skip_ws();
    out_.object = p_ < end_ && *p_ == '{';
    if (out_.object) out_.members.reserve(16);  // a model call's or a timings object's keys, in one allocation
    if (!value(0)) return error();
    skip_ws();
    if (whole && p_ != end_) return fail("unexpected text after the value"), error();
    return std::move(out_);
  }

 private:
  bool fail(const char* what) {
    if (!what_) what_ = what, at_ = static_cast<std::size_t>(p_ - begin_);
    return false;
  }
  Error error() const {
    if (too_deep_) return make_error(Errc::bad_request, json_depth_message(max_));
    return make_error(Errc::bad_request, std::string("not valid JSON: ") + what_ + " at byte " + std::to_string(at_));
  }
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool value(std::size_t depth) {
    if (p_ == end_) return fail("unexpected end");
    switch (*p_) {
      case '{': return container(depth, '}');
      case '[': return container(depth, ']');
      case '"': return string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number();
    }
  }

  // An object or array; the members of the top-level object are recorded.
  bool container(std::size_t depth, char close) {
    if (++depth > max_) return too_deep_ = true, fail("too deep");
    ++p_;
    skip_ws();
    if (p_ < end_ && *p_ == close) return ++p_, true;
    while (true) {
      const unsigned char* key = nullptr;
      const unsigned char* key_end = nullptr;
      if (close == '}') {
        if (p_ == end_ || *p_ != '"') return fail("expected a key");
        key = p_;
        if (!string()) return false;
        key_end = p_;
        skip_ws();
        if (p_ == end_ || *p_ != ':') return fail("expected ':'");
        ++p_;
        skip_ws();
      }
      const unsigned char* start = p_;
      if (!value(depth)) return false;
      if (key && depth == 1) record(span(key, key_end), span(start, p_));
      skip_ws();
      if (p_ == end_) return fail("unexpected end");
      if (*p_ == close) return ++p_, true;
      if (*p_ != ',') return fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
      ++p_;
      skip_ws();
    }
  }

  static std::string_view span(const unsigned char* from, const unsigned char* to) {
    return {reinterpret_cast<const char*>(from), static_cast<std::size_t>(to - from)};
  }

  void record(std::string_view quoted_key, std::string_view value) {
    std::string_view key = quoted_key.substr(1, quoted_key.size() - 2);
    if (key.find('\\') != std::string_view::npos) key = out_.decoded.emplace_front(json_string(quoted_key));
    out_.members.push_back({key, value});
  }

  bool string() {
    ++p_;  // the opening quote
    while (true) {
      p_ = skip_plain(p_, end_);
      if (p_ == end_) return fail("unterminated string");
      const unsigned char c = *p_;
      if (c == '"') return ++p_, true;
      if (c == '\\') {
        if (!escape()) return false;
      } else if (c < 0x20) {
        return fail("control character in a string");
      } else if (!utf8()) {
        return false;
      }
    }
  }

  bool escape() {
    ++p_;
    if (p_ == end_) return fail("unterminated string");
    switch (*p_++) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return true;
      case 'u': break;
      default: return fail("invalid escape");
    }
    unsigned cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("lone low surrogate");
    if (cp < 0xD800 || cp > 0xDBFF) return true;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("high surrogate without its pair");
    p_ += 2;
    unsigned low = 0;
    if (!hex4(low)) return false;
    if (low < 0xDC00 || low > 0xDFFF) return fail("high surrogate without its pair");
    return true;
  }

  bool hex4(unsigned& cp) {
    if (end_ - p_ < 4) return fail("invalid \\u escape");
    for (int i = 0; i < 4; ++i, ++p_) {
      const unsigned char c = *p_;
      const int d = in(c, '0', '9') ? c - '0' : in(c, 'a', 'f') ? c - 'a' + 10 : in(c, 'A', 'F') ? c - 'A' + 10 : -1;
      if (d < 0) return fail("invalid \\u escape");
      cp = cp * 16 + static_cast<unsigned>(d);
    }
    return true;
  }

  // One UTF-8 sequence of RFC 3629 (no overlong forms, no surrogates, at most U+10FFFF).
  bool utf8() {
    const unsigned char c = *p_;
    int more = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (in(c, 0xC2, 0xDF)) more = 1;
    else if (c == 0xE0) more = 2, lo = 0xA0;
    else if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) more = 2;
    else if (c == 0xED) more = 2, hi = 0x9F;
    else if (c == 0xF0) more = 3, lo = 0x90;
    else if (in(c, 0xF1, 0xF3)) more = 3;
    else if (c == 0xF4) more = 3, hi = 0x8F;
    else return fail("invalid UTF-8");
    if (end_ - p_ <= more) return fail("invalid UTF-8");
    if (!in(p_[1], lo, hi)) return fail("invalid UTF-8");
    for (int i = 2; i <= more; ++i)
      if (!in(p_[i], 0x80, 0xBF)) return fail("invalid UTF-8");
    p_ += more + 1;
    return true;
  }

  bool word(std::string_view w) {
    if (static_cast<std::size_t>(end_ - p_) < w.size() ||
        std::string_view(reinterpret_cast<const char*>(p_), w.size()) != w)
      return fail("invalid literal");
    p_ += w.size();
    return true;
  }

  bool digits() {
    const unsigned char* s = p_;
    while (p_ < end_ && in(*p_, '0', '9')) ++p_;
    return p_ != s;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and finite (nlohmann refuses 1e999).
  bool number() {
    const unsigned char* s = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_ || !in(*p_, '0', '9')) return fail("invalid value");
    if (*p_ == '0') ++p_;
    else digits();
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return fail("invalid number");
    }
    bool exponent = false;
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return fail("invalid number");
      exponent = true;
    }
    if ((exponent || p_ - s > 300) &&
        !std::isfinite(std::strtod(std::string(reinterpret_cast<const char*>(s), p_ - s).c_str(), nullptr)))
      return p_ = s, fail("number out of range");
    return true;
  }

  const unsigned char* begin_;
  const unsigned char* p_;
  const unsigned char* end_;
  std::size_t max_;
  bool too_deep_ = false;
  const char* what_ = nullptr;
  std::size_t at_ = 0;
  JsonScan out_;
};

}  // namespace

Result<JsonScan> scan_json(std::string_view text, std::size_t max_depth) { return Scanner(text, max_depth).run(true); }

Result<JsonScan> scan_json_prefix(std::string_view text, std::size_t max_depth) {
  return Scanner(text, max_depth).run(false);
}

std::string json_string(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos) return std::string(quoted.substr(1, quoted.size() - 2));
  return nlohmann::json::parse(quoted, nullptr, false).get<std::string>();  // escapes (rare): the library
}

}  // namespace kevlaya
