// Safe local defaults (docs/security.md): Host and Origin rules, CORS preflights, JSON-only
// POSTs, 405 with Allow, Host header count (RFC 9112).
#include <catch2/catch.hpp>

#include "door_fixture.hpp"

using namespace kevlaya::test;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

std::string raw_get(const std::string& target, const std::string& headers) {
  return "GET " + target + " HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
}

std::string status_line(RawClient& c) {
  const auto got = c.read_until("\r\n");
  return got.substr(0, got.find("\r\n"));
}

}  // namespace

TEST_CASE("a foreign Host is refused with 403 on a loopback door (DNS rebinding)", "[http]") {
  Door door;
  for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil",
                           "10.0.0.1", "", "127.0.0.1:80x"}) {
    INFO(host);
    auto r = http_request(door.port(), "GET", "/v1/models", "", {{"Host", host}});
    CHECK(r.status == (std::string(host).empty() ? 400 : 403));
    if (r.status == 403) CHECK(r.json_body()["error"]["code"] == "forbidden");
  }
  CHECK(door.upstream().requests == 0);
}

TEST_CASE("loopback Host names are served, with any port", "[http]") {
  Door door;
  for (const char* host : {"localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:1", "127.1.2.3:9",
                           "[::1]", "[::1]:8080", "localhost."}) {
    INFO(host);
    CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Host", host}}).status == 200);
  }
}

TEST_CASE("allowed_hosts names are served besides loopback", "[http]") {
  DoorOptions o;
  o.allowed_hosts = {"kev.lan"};
  Door door(o);
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Host", "kev.lan:8080"}}).status == 200);
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Host", "KEV.LAN"}}).status == 200);
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Host", "other.lan"}}).status == 403);
}

TEST_CASE("a request without Host or with two Host headers is 400 (RFC 9112)", "[http]") {
  Door door;
  RawClient none(door.port());
  none.send(raw_get("/health", ""));
  CHECK(status_line(none) == "HTTP/1.1 400 Bad Request");
  RawClient two(door.port());
  two.send(raw_get("/health", "Host: localhost\r\nHost: localhost\r\n"));
  CHECK(status_line(two) == "HTTP/1.1 400 Bad Request");
  RawClient one(door.port());
  one.send(raw_get("/health", "Host: localhost\r\n"));
  CHECK(status_line(one) == "HTTP/1.1 200 OK");
}

TEST_CASE("a cross-origin request is refused with 403 unless its origin is allowed", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/admin/load/kev").status == 200);
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1"}) {
    INFO(origin);
    auto r = http_request(door.port(), "POST", "/admin/unload", "", {{"Origin", origin}});
    CHECK(r.status == 403);
    CHECK(r.header("access-control-allow-origin").empty());
  }
  auto snap = door.snapshot();
  CHECK(snap.profiles.front().state == kevlaya::supervisor::Phase::ready);  // not unloaded
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                     {{"Origin", "http://evil.example"}}).status == 403);
  CHECK(door.upstream().requests == 0);
}

TEST_CASE("the door's own origin is served", "[http]") {
  Door door;
  const std::string host = "127.0.0.1:" + std::to_string(door.port());
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                        {{"Host", host}, {"Origin", "http://" + host}});
  CHECK(r.status == 200);
}

TEST_CASE("an allowed origin gets exactly its origin back, its preflight carries no credentials", "[http]") {
  DoorOptions o;
  o.allowed_origins = {"http://localhost:3000"};
  Door door(o);
  auto pre = http_request(door.port(), "OPTIONS", "/v1/chat/completions", "",
                          {{"Origin", "http://localhost:3000"}, {"Access-Control-Request-Method", "POST"},
                           {"Access-Control-Request-Headers", "content-type"}});
  CHECK(pre.status == 200);  // llama-server's preflight: 200, GET and POST, the requested headers
  CHECK(pre.header("access-control-allow-origin") == "http://localhost:3000");
  CHECK(pre.header("access-control-allow-methods") == "GET, POST");
  CHECK(pre.header("access-control-allow-headers") == "content-type");
  CHECK(pre.header("access-control-allow-credentials").empty());
  CHECK(pre.header("vary") == "Origin");
  auto other = http_request(door.port(), "OPTIONS", "/v1/chat/completions", "",
                            {{"Origin", "http://localhost:3001"}, {"Access-Control-Request-Method", "POST"}});
  CHECK(other.status == 200);  // llama-server's refusal: no Access-Control-Allow-* at all
  CHECK(other.header("access-control-allow-origin").empty());
  CHECK(other.header("access-control-allow-methods").empty());
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                     {{"Origin", "http://localhost:3001"}})
            .status == 403);  // and the call itself is refused
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                        {{"Origin", "http://localhost:3000"}});
  CHECK(r.status == 200);
  CHECK(r.header("access-control-allow-origin") == "http://localhost:3000");
  CHECK(r.header("access-control-expose-headers").find("X-Kevlaya-Model") != std::string::npos);
  // Without an Origin nothing CORS-related is added.
  CHECK(http_request(door.port(), "GET", "/v1/models").header("access-control-allow-origin").empty());
}

// Regression: the first Origin was judged and a second one ignored, so a request naming an allowed
// origin and then another reached the child (and a proxy reading the last one saw a foreign page).
TEST_CASE("a request with two Origin headers is refused like a foreign origin", "[http]") {
  DoorOptions o;
  o.allowed_origins = {"http://localhost:3000"};
  Door door(o);
  const std::string body = chat_body("kev");
  for (const char* origins : {"Origin: http://localhost:3000\r\nOrigin: http://evil.example\r\n",
                              "Origin: http://localhost:3000\r\nOrigin: http://localhost:3000\r\n",
                              "Origin: http://evil.example\r\nOrigin: http://localhost:3000\r\n"}) {
    INFO(origins);
    RawClient c(door.port());
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" + std::string(origins) +
           "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body);
    const auto got = c.read_until("\r\n\r\n");
    CHECK(got.rfind("HTTP/1.1 403", 0) == 0);
    CHECK(got.find("Access-Control-Allow-Origin") == std::string::npos);
  }
  CHECK(door.upstream().requests == 0);
  // One allowed Origin is still served.
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", body, {{"Origin", "http://localhost:3000"}}).status ==
        200);
}

// What a page can send without a preflight (a form type, text/plain, none) is refused from a
// browser, even from an allowed origin: every browser POST carries Origin, and Sec-Fetch-*.
TEST_CASE("a text/plain POST from a web page is refused with 415 before it reaches a child (simple request)", "[http]") {
  DoorOptions o;
  o.allowed_origins = {"http://localhost:3000"};
  Door door(o);
  const std::vector<std::pair<std::string, std::string>> browsers[] = {
      {{"Origin", "http://localhost:3000"}}, {{"Sec-Fetch-Site", "same-origin"}}, {{"Sec-Fetch-Mode", "no-cors"}}};
  for (const auto& marks : browsers) {
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
      INFO(marks.front().first << ", " << type);
      auto headers = marks;
      headers.emplace_back("Content-Type", type);
      auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), headers);
      CHECK(r.status == 415);
      CHECK(r.json_body()["error"]["code"] == "unsupported_media_type");
    }
  }
  CHECK(http_request(door.port(), "POST", "/admin/unload", "",
                     {{"Content-Type", "text/plain"}, {"Sec-Fetch-Site", "cross-site"}}).status == 415);
  CHECK(door.upstream().requests == 0);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                     {{"Content-Type", "Application/JSON; charset=utf-8"}, {"Origin", "http://localhost:3000"}}).status == 200);
}

// Ollama's and llama-server's own examples are `curl URL -d '{...}'`: curl then sends a form type.
// A client that is not a browser may do so; the body is still read as JSON.
TEST_CASE("a POST without a JSON Content-Type from a client that is not a browser is read as JSON (curl -d)", "[http]") {
  Door door;
  for (const char* type : {"application/x-www-form-urlencoded", "text/plain", ""}) {
    INFO(type);
    CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), {{"Content-Type", type}}).status == 200);
    CHECK(http_request(door.port(), "POST", "/api/chat", chat_body("kev"), {{"Content-Type", type}}).status == 200);
  }
  CHECK(door.upstream().requests == 6);
  const auto form = http_request(door.port(), "POST", "/v1/chat/completions", "model=kev&prompt=hi",
                                 {{"Content-Type", "application/x-www-form-urlencoded"}});
  CHECK(form.status == 400);  // a real form body is not JSON
  CHECK(door.upstream().requests == 6);
}

TEST_CASE("an unknown method on a known path is 405 with Allow, OPTIONS lists it", "[http]") {
  Door door;
  auto del = http_request(door.port(), "DELETE", "/v1/chat/completions");
  CHECK(del.status == 405);
  CHECK(del.header("allow") == "POST, OPTIONS");
  CHECK(del.json_body()["error"]["code"] == "method_not_allowed");
  auto post = http_request(door.port(), "POST", "/v1/models", "{}");
  CHECK(post.status == 405);
  CHECK(post.header("allow") == "GET, OPTIONS");
  CHECK(http_request(door.port(), "PUT", "/v1/runs/run-1").status == 405);
  CHECK(http_request(door.port(), "GET", "/admin/unload").status == 405);
  CHECK(http_request(door.port(), "GET", "/nope").status == 404);
  auto opt = http_request(door.port(), "OPTIONS", "/status");
  CHECK(opt.status == 204);
  CHECK(opt.header("allow") == "GET, OPTIONS");
}

TEST_CASE("API keys are never shown by /status or /metrics", "[http]") {
  DoorOptions o;
  o.api_keys = {"sk-door-secret-1234"};
  Door door(o);
  const Headers auth = {{"Authorization", "Bearer sk-door-secret-1234"}};
  auto st = http_request(door.port(), "GET", "/status", "", auth);
  REQUIRE(st.status == 200);
  CHECK(st.body.find("sk-door-secret") == std::string::npos);
  auto m = http_request(door.port(), "GET", "/metrics", "", auth);
  REQUIRE(m.status == 200);
  CHECK(m.body.find("sk-door-secret") == std::string::npos);
}
