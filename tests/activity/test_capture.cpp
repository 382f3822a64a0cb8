// The captures' ring: redaction of every credential header, compression as the bytes pass, the
// per-capture and total caps, files on disk, and reading a capture back as JSON a piece at a time.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "activity/capture.hpp"
#include "support/paths.hpp"

using namespace kevlaya::activity;
using kevlaya::test::TempDir;
using nlohmann::json;

namespace {

Capture capture(const std::string& id, std::string body = "{\"model\":\"kev\"}") {
  Capture c;
  c.id = id;
  c.model = "kev";
  c.method = "POST";
  c.endpoint = "/v1/chat/completions";
  c.request_body = std::move(body);
  c.status = 200;
  c.response_body = "{\"choices\":[]}";
  return c;
}

CaptureInfo info(const std::string& id) {
  CaptureInfo i;
  i.id = id;
  i.model = "kev";
  i.method = "POST";
  i.status = 200;
  return i;
}

// The whole JSON of a capture (small captures only), or nullopt when there is none.
std::optional<json> read_json(const CaptureRing& ring, const std::string& id) {
  auto r = ring.open(id);
  if (!r) return std::nullopt;
  std::string text;
  for (int i = 0; i < 100000; ++i) {  // bounded: small captures are a few pieces
    const std::string piece = r->next();
    if (piece.empty()) break;
    text += piece;
  }
  if (r->failed()) return std::nullopt;
  return json::parse(text, nullptr, false);
}

// Incompressible bytes (xorshift), so that compressed sizes follow the input.
std::string noise(std::size_t n, std::uint64_t seed = 88172645463325252ull) {
  std::string s(n, '\0');
  for (auto& ch : s) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    ch = static_cast<char>(seed);
  }
  return s;
}

// 64 KiB of control characters (0x00..0x1F, round and round).
std::string controls() {
  std::string s(64 * 1024, '\0');
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i % 32);
  return s;
}

constexpr std::size_t kZstdBlock = 128 * 1024;  // a capture stops within a slice and a block of its cap

}  // namespace

TEST_CASE("every credential header keeps its name and loses its value", "[activity][capture]") {
  const HeaderPairs in = {{"Authorization", "Bearer sk-1"}, {"x-api-key", "sk-2"}, {"API-KEY", "sk-3"},
                          {"Cookie", "s=sk-4"}, {"Set-Cookie", "s=sk-5"}, {"Proxy-Authorization", "Basic sk-6"},
                          {"User-Agent", "agent/1"}, {"X-Session-ID", "s-1"}};
  const auto out = redact(in);
  REQUIRE(out.size() == in.size());
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(out[i].first == in[i].first);
    CHECK(out[i].second == "[redacted]");
  }
  CHECK(out[6].second == "agent/1");
  CHECK(out[7].second == "s-1");
}

TEST_CASE("a capture reads back whole, its secrets redacted before it is stored", "[activity][capture]") {
  CaptureRing ring(1 << 20);
  auto c = capture("a1");
  c.request_headers = {{"Authorization", "Bearer sk-secret"}, {"Content-Type", "application/json"}};
  REQUIRE(ring.add(c));
  const auto doc = read_json(ring, "a1");
  REQUIRE(doc);
  CHECK(doc->dump().find("sk-secret") == std::string::npos);
  CHECK((*doc)["request"]["headers"][0] == nlohmann::json::array({"Authorization", "[redacted]"}));
  CHECK((*doc)["request"]["body"] == "{\"model\":\"kev\"}");
  CHECK((*doc)["response"]["status"] == 200);
  CHECK((*doc)["response"]["body"] == "{\"choices\":[]}");
  CHECK((*doc)["truncated"] == false);
  CHECK_FALSE(read_json(ring, "nope"));
}

TEST_CASE("the ring holds compressed bytes within max_mib, dropping the oldest", "[activity][capture]") {
  const std::string big(200 * 1024, 'x');  // compresses to almost nothing
  CaptureRing ring(4096);
  REQUIRE(ring.add(capture("c0", big)));
  CHECK(ring.bytes() < 1024);  // 200 KiB of text held in well under 1 KiB
  for (int i = 1; i < 100; ++i) REQUIRE(ring.add(capture("c" + std::to_string(i), big)));
  CHECK(ring.bytes() <= 4096);
  CHECK_FALSE(read_json(ring, "c0"));
  CHECK(read_json(ring, "c99"));
  CaptureRing tiny(16);
  CHECK_FALSE(tiny.add(capture("too-big")));  // larger than the whole ring: not kept
  CHECK(tiny.size() == 0);
}

TEST_CASE("capture: a 100 MiB answer is compressed as it passes, the writer's memory bounded",
          "[activity][capture]") {
  CaptureRing ring(std::size_t{64} << 20);
  auto w = ring.start();
  REQUIRE(w);
  const std::string chunk = controls();
  std::size_t most = 0;
  for (int i = 0; i < 1600; ++i) {  // 1600 x 64 KiB = 100 MiB, as a relay feeds it
    w->response(chunk);
    most = std::max(most, w->memory());
  }
  WARN("zstd context " << most << " bytes; 100 MiB stored in " << w->compressed() << " bytes");
  CHECK(most < (std::size_t{1} << 20));        // a window, never the answer
  CHECK(w->raw() == std::uint64_t{100} << 20);  // all of it kept...
  CHECK(w->compressed() < (std::size_t{1} << 20));  // ...in well under 1 MiB
  CHECK_FALSE(w->truncated());
  CHECK(ring.bytes() == w->compressed());  // charged while the call runs
  REQUIRE(ring.finish(std::move(w), info("big")));
  CHECK(ring.size() == 1);
}

TEST_CASE("capture: control characters read back escaped, a bounded piece at a time", "[activity][capture]") {
  CaptureRing ring(std::size_t{64} << 20);
  auto w = ring.start();
  REQUIRE(w);
  const std::string chunk = controls();
  for (int i = 0; i < 64; ++i) w->response(chunk);  // 4 MiB
  REQUIRE(ring.finish(std::move(w), info("ctl")));
  auto r = ring.open("ctl");
  REQUIRE(r);
  // Each control character is \u00XX (6 bytes) but \b \t \n \f \r (2 bytes): 27 x 6 + 5 x 2 per 32.
  const std::size_t body_json = (std::size_t{4} << 20) / 32 * (27 * 6 + 5 * 2);
  std::string head, tail;
  std::size_t total = 0, largest = 0;
  for (int i = 0; i < 100000; ++i) {
    const std::string piece = r->next();
    if (piece.empty()) break;
    if (head.size() < 4096) head += piece.substr(0, 4096);
    tail = (tail + piece.substr(piece.size() - std::min<std::size_t>(piece.size(), 64)));
    tail = tail.substr(tail.size() - std::min<std::size_t>(tail.size(), 64));
    total += piece.size();
    largest = std::max(largest, piece.size());
  }
  CHECK_FALSE(r->failed());
  CHECK(largest <= 6 * 64 * 1024);  // one decompressed piece, escaped
  const std::string marker = "\"response\":{\"status\":200,\"body\":\"";
  const auto body_at = head.find(marker);
  REQUIRE(body_at != std::string::npos);
  const std::string prefix_json = head.substr(0, body_at + marker.size());
  CHECK(head.substr(body_at + marker.size(), 14) == "\\u0000\\u0001\\u");
  CHECK(tail.substr(tail.size() - 3) == "\"}}");
  CHECK(total == prefix_json.size() + body_json + 3);
}

TEST_CASE("capture: quotes, control characters and bad UTF-8 across pieces make valid JSON",
          "[activity][capture]") {
  CaptureRing ring(1 << 20);
  Capture c = capture("u1");
  // A 3-byte character across the 64 KiB piece boundary, then every byte value once.
  c.request_body = std::string(64 * 1024 - 1, 'a') + "\xE2\x82\xAC" + "\"quoted\\\"\n\t\x01\x7F";
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  c.response_body = "caf\xC3\xA9 \xF0\x9F\x98\x80 " + all + "\xE2\x82";  // ends inside a sequence
  REQUIRE(ring.add(c));
  const auto doc = read_json(ring, "u1");
  REQUIRE(doc);  // parsed: valid JSON and valid UTF-8
  CHECK((*doc)["request"]["body"] == c.request_body);
  const std::string got = (*doc)["response"]["body"];
  CHECK(got.rfind("caf\xC3\xA9 \xF0\x9F\x98\x80 ", 0) == 0);
  CHECK(got.substr(got.size() - 3) == "\xEF\xBF\xBD");  // the cut sequence: U+FFFD
  CHECK(got.find(std::string("\0\x01\x02", 3)) != std::string::npos);
  CHECK(got.find("\x1E\x1F !\"#") != std::string::npos);
}

TEST_CASE("capture: past its cap a capture stops and is marked truncated", "[activity][capture]") {
  CaptureRing ring(1 << 20);  // a capture may take a quarter: 256 KiB
  auto w = ring.start();
  REQUIRE(w);
  const std::string chunk = noise(64 * 1024);
  for (int i = 0; i < 64; ++i) w->response(chunk);  // 4 MiB that do not compress
  CHECK(w->truncated());
  CHECK(w->raw() < std::uint64_t{1} << 20);
  CHECK(w->compressed() <= ring.max_capture_bytes() + 32 * 1024 + kZstdBlock);
  REQUIRE(ring.finish(std::move(w), info("cut")));
  const auto doc = read_json(ring, "cut");
  REQUIRE(doc);
  CHECK((*doc)["truncated"] == true);
  CHECK(ring.bytes() <= (std::size_t{1} << 20));
}

TEST_CASE("capture: captures being written count against the total, the oldest kept dropped first",
          "[activity][capture]") {
  const std::size_t max = 1 << 20;
  CaptureRing ring(max);
  for (const char* id : {"a", "b", "c"}) REQUIRE(ring.add(capture(id, noise(64 * 1024))));  // 192 KiB kept
  std::vector<std::unique_ptr<CaptureWriter>> calls;
  bool a_went_first = false;
  for (int i = 0; i < 8; ++i) {  // 8 calls of 192 KiB each: more than the ring
    calls.push_back(ring.start());
    REQUIRE(calls.back());
    for (int k = 0; k < 6; ++k) {
      calls.back()->response(noise(32 * 1024, static_cast<std::uint64_t>(i * 6 + k + 1)));  // never the same
      if (ring.size() == 2) a_went_first = !ring.open("a") && ring.open("b") && ring.open("c");
      CHECK(ring.bytes() <= max + 32 * 1024 + kZstdBlock);
    }
  }
  CHECK(a_went_first);
  CHECK(ring.size() == 0);  // every kept one gave way to the calls in flight
  CHECK(calls.back()->truncated());  // the ring was full of calls in flight: the last ones stop
  calls.clear();  // calls that never finish give their bytes back
  CHECK(ring.bytes() == 0);
}

TEST_CASE("capture: on disk each capture is a file, gone when dropped and with the ring", "[activity][capture]") {
  TempDir dir("capture-disk");
  const auto folder = dir.path() / "captures";
  std::filesystem::create_directories(folder);
  kevlaya::test::write_text(folder / "7.zst", "from a previous run");
  const auto files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(folder)) n += e.path().extension() == ".zst";
    return n;
  };
  {
    CaptureRing ring(4096, folder);
    CHECK(files() == 0);  // what a previous run left is gone
    REQUIRE(ring.add(capture("d0", std::string(100 * 1024, 'y'))));
    CHECK(files() == 1);
    auto early = ring.open("d0");  // opened before it is dropped: still readable after
    REQUIRE(early);
    for (int i = 1; i < 60; ++i) REQUIRE(ring.add(capture("d" + std::to_string(i))));
    CHECK_FALSE(ring.open("d0"));
    CHECK(files() == static_cast<int>(ring.size()));
    std::string text;
    for (std::string p = early->next(); !p.empty(); p = early->next()) text += p;
    CHECK_FALSE(early->failed());
    const auto doc = json::parse(text, nullptr, false);
    REQUIRE(doc.is_object());
    CHECK(doc["request"]["body"] == std::string(100 * 1024, 'y'));
    const auto last = read_json(ring, "d59");
    REQUIRE(last);
    CHECK((*last)["response"]["body"] == "{\"choices\":[]}");
  }
  CHECK(files() == 0);  // captures do not outlive the door
}

TEST_CASE("capture: a damaged file reads as failed, never as a wrong document", "[activity][capture]") {
  TempDir dir("capture-damaged");
  CaptureRing ring(1 << 20, dir.path());
  REQUIRE(ring.add(capture("x1", noise(200 * 1024))));
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) file = e.path();
  REQUIRE_FALSE(file.empty());
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  auto r = ring.open("x1");
  REQUIRE(r);
  for (int i = 0; i < 1000 && !r->next().empty(); ++i) {
  }
  CHECK(r->failed());
}
