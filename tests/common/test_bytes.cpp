// common/bytes.hpp: the rules for bytes that are not UTF-8 on their way to JSON, state files and
// terminals (issue 14: paths are bytes, control bytes of task ids).
#include <catch2/catch.hpp>

#include "common/bytes.hpp"

using namespace kevlaya;
using nlohmann::json;

TEST_CASE("dump_json never throws on bytes that are not UTF-8: they become U+FFFD", "[bytes]") {
  const json j = {{"path", "/tmp/d\xe9j\xe0/m.gguf"}, {"ok", "d\xc3\xa9j\xc3\xa0"}};
  CHECK_THROWS(j.dump());  // what the state file and --json outputs used to do
  CHECK(dump_json(j) == "{\"ok\":\"d\xc3\xa9j\xc3\xa0\",\"path\":\"/tmp/d\xef\xbf\xbdj\xef\xbf\xbd/m.gguf\"}");
  CHECK(json::parse(dump_json(j, 2))["ok"] == "d\xc3\xa9j\xc3\xa0");
}

TEST_CASE("bytes_to_json round-trips any bytes and leaves UTF-8 text as a plain string", "[bytes]") {
  for (const std::string& s : {std::string("plain"), std::string("d\xc3\xa9j\xc3\xa0"), std::string("d\xe9j\xe0"),
                               std::string("\xff"), std::string("a\\xe9"), std::string("nul\0in", 6)}) {
    INFO(printable(s));
    const auto j = bytes_to_json(s);
    CHECK(j.is_string() == !utf8_error(s).has_value());
    CHECK(bytes_from_json(json::parse(dump_json(j))) == s);
  }
  CHECK(bytes_to_json("d\xe9j\xe0") == json{{"hex", "64e96ae0"}});
  CHECK_FALSE(bytes_from_json(json{{"hex", "6"}}));
  CHECK_FALSE(bytes_from_json(json{{"hex", "zz"}}));
  CHECK_FALSE(bytes_from_json(json::array({1, 2})));
}

TEST_CASE("printable escapes control characters, C1 and bidi controls and stray bytes, nothing else", "[bytes]") {
  CHECK(printable("plain d\xc3\xa9j\xc3\xa0 \\ ok") == "plain d\xc3\xa9j\xc3\xa0 \\ ok");
  CHECK(printable("t\x1b[2J\x07\n\t\x7f") == "t\\x1B[2J\\x07\\x0A\\x09\\x7F");
  CHECK(printable("\xc2\x9b" "1m") == "\\u{009B}1m");             // CSI as a C1 code point
  CHECK(printable("a\xe2\x80\xae" "b") == "a\\u{202E}b");          // right-to-left override
  CHECK(printable("d\xe9j\xe0") == "d\\xE9j\\xE0");                // Latin-1 bytes
  CHECK(printable("\xed\xa0\x80") == "\\xED\\xA0\\x80");           // a UTF-16 surrogate is not UTF-8
  CHECK(printable("\xe2\x82") == "\\xE2\\x82");                    // truncated sequence
}

TEST_CASE("utf8_error finds the first invalid sequence (overlong, surrogate, > U+10FFFF)", "[bytes]") {
  CHECK_FALSE(utf8_error("d\xc3\xa9j\xc3\xa0 \xf0\x9f\x98\x80"));
  CHECK(utf8_error("ab\xc0\xaf") == std::optional<std::size_t>(2));
  CHECK(utf8_error("\xe0\x80\xaf") == std::optional<std::size_t>(0));
  CHECK(utf8_error("x\xed\xa0\x80") == std::optional<std::size_t>(1));
  CHECK(utf8_error("\xf4\x90\x80\x80") == std::optional<std::size_t>(0));
}

TEST_CASE("utf8_seq_len_or_cut tells a sequence cut short by the end from an invalid one", "[bytes]") {
  CHECK(utf8_seq_len_or_cut("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8_seq_len_or_cut("\xf0\x9f\x98", 0) == -1);  // valid so far: the rest may follow
  CHECK(utf8_seq_len_or_cut("\xf0\x9f", 0) == -1);
  CHECK(utf8_seq_len_or_cut("\xf0\x80\x98", 0) == 0);  // overlong: invalid whatever follows
  CHECK(utf8_seq_len_or_cut("\xc3", 0) == -1);
  CHECK(utf8_seq_len_or_cut("\xc3(", 0) == 0);
  CHECK(utf8_seq_len("\xf0\x9f\x98", 0) == 0);  // the whole-text reader calls it invalid
}
