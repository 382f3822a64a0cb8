// The captures' ring: redaction of every credential header, compression, the byte bound.
#include <catch2/catch.hpp>

#include "activity/capture.hpp"

using namespace kevlaya::activity;

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
  const auto doc = ring.get("a1");
  REQUIRE(doc);
  CHECK(doc->dump().find("sk-secret") == std::string::npos);
  CHECK((*doc)["request"]["headers"][0] == nlohmann::json::array({"Authorization", "[redacted]"}));
  CHECK((*doc)["request"]["body"] == "{\"model\":\"kev\"}");
  CHECK((*doc)["response"]["status"] == 200);
  CHECK((*doc)["response"]["body"] == "{\"choices\":[]}");
  CHECK_FALSE(ring.get("nope"));
}

TEST_CASE("the ring holds compressed bytes within max_mib, dropping the oldest", "[activity][capture]") {
  const std::string big(200 * 1024, 'x');  // compresses to almost nothing
  CaptureRing ring(4096);
  REQUIRE(ring.add(capture("c0", big)));
  CHECK(ring.bytes() < 1024);  // 200 KiB of text held in well under 1 KiB
  for (int i = 1; i < 100; ++i) REQUIRE(ring.add(capture("c" + std::to_string(i), big)));
  CHECK(ring.bytes() <= 4096);
  CHECK_FALSE(ring.get("c0"));
  CHECK(ring.get("c99"));
  CaptureRing tiny(16);
  CHECK_FALSE(tiny.add(capture("too-big")));  // larger than the whole ring: not kept
  CHECK(tiny.size() == 0);
}
