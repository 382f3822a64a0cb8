// scan_json: the door's validating pass over a model call's body. It must accept exactly what
// nlohmann::json accepts (the DOM parse it replaces on the hot path), refuse nesting past the bound
// as parse_json_bounded does, and report the top-level object's members as spans of the text.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/bounded_json.hpp"
#include "common/json_scan.hpp"
#include "http/bodies.hpp"

using kevlaya::scan_json;
using nlohmann::json;

namespace {

const std::vector<std::string> kSeeds = {
    R"({"model":"kev","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":8,"stream":true})",
    R"({"a":[1,-2,3.5,-0.0,1e3,2E-7,6.02e+23,0,null,true,false,"x"],"b":{},"c":[],"d":{"e":{"f":[[[]]]}}})",
    R"(["\"\\\/\b\f\n\r\t","\u00e9\u20AC\uD83D\uDE00","é€😀","tab	?",""])",
    "  \t\r\n{ \"k\" : [ 1 , { \"x\" : \"y\" } ] }  \n",
    R"("just a string")",
    "12345678901234567890123456789",
    "-0.000001e-400",
    "\xEF\xBB\xBF{\"bom\":1}",
    R"({"keep_alive":"5m","model":"laya","k\u0065y":{"model":"inner"},"model":"kev"})",
};

const char kBytes[] = {'{', '}', '[', ']', '"', '\\', ',', ':', '0', '1', '9', 'e', 'E', '+', '-', '.', 't', 'f',
                       'n', 'u', 'a', 'D', ' ', '\n', '\t', '\0', '\x1f', '\x7f', '\x80', '\xbf', '\xc0',
                       '\xc2', '\xe0', '\xed', '\xef', '\xf0', '\xf4', '\xf5', '\xff'};

std::string mutate(std::string s, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    const char b = kBytes[rng() % sizeof(kBytes)];
    switch (rng() % 5) {
      case 0: if (at < s.size()) s.erase(at, 1); break;
      case 1: s.insert(at, 1, b); break;
      case 2: if (at < s.size()) s[at] = b; break;
      case 3: s.resize(at); break;  // truncated
      default: if (at < s.size()) s.insert(at, s.substr(at, rng() % 8)); break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("json scan: accepts exactly what nlohmann accepts (but a NUL byte), on seeds and 40,000 mutations") {
  std::mt19937 rng(20261201);
  std::vector<std::string> cases = kSeeds;
  for (const char* t : {"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{,}", "[01]", "-", "1.", ".5", "1e", "1e+",
                        "tru", "nul", "true false", "\"\\x\"", "\"\\u12\"", "\"\\uD800\"", "\"\\uDC00\"",
                        "\"\\uD800\\u0041\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"",
                        "\"\xE0\x80\x80\"", "\"\xF0\x80\x80\x80\"", "\"\x01\"", "1e999", "-1e400", "1e-999",
                        "[1]x", "{\"a\" 1}", "{1:2}", "\xEF\xBB", "\xEF\xBB\xBF"})
    cases.emplace_back(t);
  cases.push_back(std::string(400, '9'));  // a 400-digit integer: overflows a double
  cases.push_back("0." + std::string(400, '9'));
  for (int i = 0; i < 40000; ++i) cases.push_back(mutate(kSeeds[rng() % kSeeds.size()], rng));
  int disagree = 0;
  for (const auto& t : cases) {
    const bool mine = scan_json(t, 1000).ok();
    // nlohmann stops at a NUL byte as at the end (a C-string convenience): "1\0junk" passes there.
    // A NUL is never valid JSON outside a string (RFC 8259), nor inside one unescaped: refused here.
    const bool theirs = t.find('\0') == std::string::npos && json::accept(t);
    if (mine != theirs && ++disagree <= 5) FAIL_CHECK("scan " << mine << ", nlohmann " << theirs << ": " << json(t).dump(-1, ' ', true, json::error_handler_t::replace));
  }
  CHECK(disagree == 0);
}

TEST_CASE("json scan: a string's special byte is found at every place of the 16-byte steps, as nlohmann finds it") {
  // The string scan skips 16 plain bytes per step: each kind of byte that ends a plain run, at every
  // offset across two steps, in strings of every length around them.
  const std::vector<std::string> specials = {"\"",     "\\\"", "\\n",  "\\u00e9", "\\q",  "\x01", "\x1f",
                                             "\x7f",   "\xc3\xa9", "\xc3", "\xe2\x82\xac", "\xff", "\xed\xa0\x80"};
  int disagree = 0, checked = 0;
  for (const auto& special : specials)
    for (std::size_t at = 0; at <= 40; ++at)
      for (std::size_t tail : {0, 1, 15, 16, 17}) {
        const std::string t = "[\"" + std::string(at, 'a') + special + std::string(tail, 'b') + "\"]";
        const bool mine = scan_json(t).ok(), theirs = json::accept(t);
        ++checked;
        if (mine != theirs && ++disagree <= 5) FAIL_CHECK("scan " << mine << ", nlohmann " << theirs << " at " << at);
      }
  CHECK(checked == 13 * 41 * 5);
  CHECK(disagree == 0);
}

TEST_CASE("json scan: refuses nesting past the bound with the same sentence as parse_json_bounded") {
  for (const std::size_t depth : {kevlaya::kMaxJsonDepth, kevlaya::kMaxJsonDepth + 1}) {
    const std::string arrays = std::string(depth, '[') + std::string(depth, ']');
    const std::string objects = [&] {
      std::string s;
      for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
      return s + "1" + std::string(depth, '}');
    }();
    for (const auto& t : {arrays, objects}) {
      auto mine = scan_json(t);
      auto theirs = kevlaya::parse_json_bounded(t);
      REQUIRE(mine.ok() == theirs.ok());
      CHECK(mine.ok() == (depth <= kevlaya::kMaxJsonDepth));
      if (!mine.ok()) CHECK(mine.error().message == theirs.error().message);
    }
  }
  // 100,000 levels: refused at the bound, long before the scanner's recursion could matter.
  auto deep = scan_json(std::string(100000, '[') + std::string(100000, ']'));
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message == kevlaya::json_depth_message());
}

TEST_CASE("json scan: keys without escapes are spans of the text, escaped ones outlive a move of the scan") {
  const std::string text = R"({"prompt_per_token_ms": 1, "pr\u006fmpt_per_second_with_a_long_key": 2})";
  auto s = scan_json(text);
  REQUIRE(s.ok());
  REQUIRE(s->members.size() == 2);
  const auto& plain = s->members[0].key;
  CHECK(plain == "prompt_per_token_ms");
  CHECK((plain.data() > text.data() && plain.data() + plain.size() < text.data() + text.size()));  // no copy
  kevlaya::JsonScan moved = std::move(*s);  // what Result hands on
  std::vector<kevlaya::JsonScan> many;
  many.push_back(std::move(moved));
  many.resize(40);  // the vector of scans reallocates: each scan is moved again
  CHECK(many.front().members[1].key == "prompt_per_second_with_a_long_key");
  CHECK(many.front().members[1].value == "2");
}

TEST_CASE("json scan: reports the top-level members' decoded keys and exact value spans, nested ones not") {
  const std::string text = R"( {"model" : "kev", "stream":true ,"k\u0065ep_alive":"5m","nested":{"model":"x"},)"
                           R"("n": -1.5e3, "model":"laya"} )";
  auto s = scan_json(text);
  REQUIRE(s.ok());
  CHECK(s->object);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& m : s->members) got.emplace_back(m.key, std::string(m.value));
  CHECK(got == std::vector<std::pair<std::string, std::string>>{{"model", "\"kev\""},
                                                                {"stream", "true"},
                                                                {"keep_alive", "\"5m\""},
                                                                {"nested", R"({"model":"x"})"},
                                                                {"n", "-1.5e3"},
                                                                {"model", "\"laya\""}});
  auto arr = scan_json(R"([{"model":"kev"}])");
  REQUIRE(arr.ok());
  CHECK_FALSE(arr->object);
  CHECK(arr->members.empty());
}

// scan_json_prefix reads the value at the start and leaves what follows (timings_of uses it on the
// `timings` object inside an answer or a stream's tail); a value cut off is an error.
TEST_CASE("json scan: a prefix scan reads the leading value only, and refuses one cut off") {
  auto s = kevlaya::scan_json_prefix(R"({"a":"}{","b":[1,{"c":2}]},"next":{)");
  REQUIRE(s.ok());
  REQUIRE(s->members.size() == 2);
  CHECK(s->members[1].value == R"([1,{"c":2}])");
  CHECK_FALSE(kevlaya::scan_json_prefix(R"({"a":"}","b":[1,)").ok());
  CHECK_FALSE(kevlaya::scan_json(R"({"a":1},)").ok());  // the whole-text scan refuses what follows
  CHECK(kevlaya::json_string(R"("plain")") == "plain");
  CHECK(kevlaya::json_string(R"("café "x"")") == "caf\xC3\xA9 \"x\"");
}

TEST_CASE("json scan: an error names what is wrong and the byte where") {
  auto e = scan_json(R"({"model":"kev",})");
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == kevlaya::Errc::bad_request);
  CHECK(e.error().message == "not valid JSON: expected a key at byte 15");
  auto u = scan_json("\"caf\xC3\"");
  REQUIRE_FALSE(u.ok());
  CHECK(u.error().message == "not valid JSON: invalid UTF-8 at byte 4");
}

// parse_model_call reads model, stream and keep_alive from the scan, as a parsed object would:
// escapes decoded, the last of a repeated key winning, nested fields ignored; the body is sent as is.
TEST_CASE("json scan: a model call's fields read from the scan as from a parsed object") {
  kevlaya::config::Config cfg;
  for (const char* name : {"kev", "laya"}) {
    kevlaya::config::Profile p;
    p.name = name;
    cfg.profiles.push_back(p);
  }
  const std::string body =
      R"({"m\u006fdel":"l\u0061ya","stream":false,"opts":{"model":"kev","stream":true},"stream":true})";
  auto call = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), body);
  REQUIRE(call.ok());
  CHECK(call->requested == "laya");
  CHECK(call->profile() == "laya");
  CHECK(call->stream);
  CHECK_FALSE(call->keep_alive_field);
  CHECK(kevlaya::http::child_body(*call, body, "laya", {}) == body);  // byte for byte
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model":7})", "\"model\" must be a string"},
           {R"(["kev"])", "request body is not a JSON object"},
           {R"({"model":"kev",})", "request body: not valid JSON: expected a key at byte 15"},
           {std::string(200, '[') + std::string(200, ']'), "request body: " + kevlaya::json_depth_message()}}) {
    auto r = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == kevlaya::Errc::bad_request);
    CHECK(r.error().message == says);
  }
}
