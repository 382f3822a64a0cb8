// Captures over the door: off by default, admin keys only, credentials redacted, linked from the
// activity record (docs/http.md "Captures").
#include <catch2/catch.hpp>

#include "door_fixture.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

DoorOptions capturing(const TempDir& dir) {
  DoorOptions o;
  o.state_dir = dir.path();
  o.api_keys = {"user-key"};
  o.admin_api_keys = {"admin-key"};
  o.capture.enabled = true;
  return o;
}

const std::vector<std::pair<std::string, std::string>> kCaptureAdmin = {{"Authorization", "Bearer admin-key"}};

// The capture id of the newest activity record (the history is written off the request path).
std::string newest_capture(std::uint16_t port) {
  std::string id;
  eventually([&] {
    const auto rows = http_request(port, "GET", "/activity", "", kCaptureAdmin).json_body()["records"];
    if (!rows.empty() && rows[0]["capture"].is_string()) id = rows[0]["capture"];
    return !id.empty();
  });
  return id;
}

}  // namespace

TEST_CASE("a capture keeps the bodies and redacts each credential header", "[http][capture]") {
  TempDir dir("door-capture");
  Door door(capturing(dir));
  // Each credential a client may send, in each header the door or a proxy might see.
  const std::vector<std::pair<std::string, std::string>> creds = {
      {"Authorization", "Bearer user-key"}, {"X-Api-Key", "user-key"}, {"Api-Key", "secret-api-key"},
      {"Cookie", "session=secret-cookie"}, {"Proxy-Authorization", "Basic secret-proxy"}};
  const auto body = chat_body("kev");
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", body, creds);
  REQUIRE(r.status == 200);
  const auto id = newest_capture(door.port());
  REQUIRE_FALSE(id.empty());
  auto got = http_request(door.port(), "GET", "/admin/captures/" + id, "", kCaptureAdmin);
  REQUIRE(got.status == 200);
  for (const char* secret : {"user-key", "secret-api-key", "secret-cookie", "secret-proxy"})
    CHECK(got.body.find(secret) == std::string::npos);
  const auto doc = got.json_body();
  CHECK(doc["request"]["body"] == body);
  CHECK(doc["response"]["body"] == r.body);
  CHECK(doc["response"]["status"] == 200);
  int redacted = 0;
  for (const auto& h : doc["request"]["headers"]) redacted += h[1] == "[redacted]";
  CHECK(redacted == static_cast<int>(creds.size()));
  // Admin keys only.
  CHECK(http_request(door.port(), "GET", "/admin/captures/" + id, "", {{"Authorization", "Bearer user-key"}}).status == 403);
  CHECK(http_request(door.port(), "GET", "/admin/captures/unknown", "", kCaptureAdmin).status == 404);
}

TEST_CASE("a streamed answer is captured as the client got it", "[http][capture]") {
  TempDir dir("door-capture-stream");
  Door door(capturing(dir));
  door.upstream().release_second.set();
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "stream", true), kCaptureAdmin);
  REQUIRE(r.status == 200);
  const auto id = newest_capture(door.port());
  REQUIRE_FALSE(id.empty());
  const auto doc = http_request(door.port(), "GET", "/admin/captures/" + id, "", kCaptureAdmin).json_body();
  const auto streamed = doc["response"]["body"].get<std::string>();
  CHECK(streamed.find("chunk-1") != std::string::npos);
  CHECK(streamed.find("data: [DONE]") != std::string::npos);
}

TEST_CASE("captures are off by default: no capture, no link", "[http][capture]") {
  TempDir dir("door-capture-off");
  DoorOptions o;
  o.state_dir = dir.path();
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  json rows;
  eventually([&] {
    rows = http_request(door.port(), "GET", "/activity").json_body()["records"];
    return rows.size() == 1;
  });
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["capture"].is_null());
  auto r = http_request(door.port(), "GET", "/admin/captures/x");
  CHECK(r.status == 404);
  CHECK(r.body.find("capture.enabled") != std::string::npos);
}
