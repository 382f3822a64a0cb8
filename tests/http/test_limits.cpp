// Limits and framing: body and header size, connection count, read and idle timeouts, bad framing.
#include <catch2/catch.hpp>

#include "door_fixture.hpp"

using namespace kevlaya::test;

TEST_CASE("an oversized body is refused with 413 before it is read", "[http]") {
  DoorOptions o;
  o.max_body_bytes = 1024;
  Door door(o);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", std::string(4096, 'x'));
  CHECK(r.status == 413);
  CHECK(r.json_body()["error"]["code"] == "payload_too_large");
}

TEST_CASE("oversized headers are refused", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send("GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(40000, 'a') + "\r\n\r\n");
  auto got = c.read_until("\r\n\r\n");
  CHECK(got.rfind("HTTP/1.1 400", 0) == 0);
}

TEST_CASE("duplicate Content-Length is bad framing: 400", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
  CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
}

TEST_CASE("bad chunked encoding is bad framing: 400", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
  CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
}

TEST_CASE("keep-alive serves several requests on one connection", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(count_of(c.read_until("uptime_s", 10s, 2), "HTTP/1.1 200") == 2);
}

TEST_CASE("a slow client cannot pin a connection: read timeout", "[http]") {
  DoorOptions o;
  o.read_timeout_s = 1;
  Door door(o);
  RawClient c(door.port());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\n");  // never finishes its header
  CHECK(c.wait_closed(10s));
}

TEST_CASE("an idle keep-alive connection is closed after idle_timeout_s", "[http]") {
  DoorOptions o;
  o.idle_timeout_s = 1;
  Door door(o);
  RawClient c(door.port());
  CHECK(c.wait_closed(10s));
}

TEST_CASE("connections over max_connections are refused with 503", "[http]") {
  DoorOptions o;
  o.max_connections = 2;
  Door door(o);
  RawClient a(door.port()), b(door.port());
  // Make sure both are registered: each answers a request on its kept-alive connection.
  a.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  b.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(a.read_until("uptime_s").find("200") != std::string::npos);
  REQUIRE(b.read_until("uptime_s").find("200") != std::string::npos);
  RawClient third(door.port());
  CHECK(third.read_until("\r\n\r\n").rfind("HTTP/1.1 503", 0) == 0);
}
