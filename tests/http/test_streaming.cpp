// Streaming pass-through: incremental, cancelled on disconnect, keep-alives during a swap, and a
// real OpenAI-style client (curl -N) unchanged.
#include <catch2/catch.hpp>

#include <future>

#include "door_fixture.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;

TEST_CASE("streaming is passed through chunk by chunk as the child produces it", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send(post("/v1/chat/completions", chat_body("kev", "stream", true)));
  // The child holds chunk-2 until we have read chunk-1 through the door: buffering would stall here.
  auto first = c.read_until("chunk-1");
  REQUIRE(first.find("chunk-1") != std::string::npos);
  CHECK(first.find("chunk-2") == std::string::npos);
  CHECK(first.find("Transfer-Encoding: chunked") != std::string::npos);
  CHECK(first.find("X-Accel-Buffering: no") != std::string::npos);
  CHECK(first.find("X-Kevlaya-Model: kev") != std::string::npos);
  CHECK(first.find("text/event-stream") != std::string::npos);
  door.upstream().release_second.set();
  auto all = c.read_until("\r\n0\r\n");
  CHECK(all.find("chunk-2") != std::string::npos);
  CHECK(all.find("data: [DONE]") != std::string::npos);
}

// What came from the child in one read leaves in one write: the head, the chunks and the last
// chunk (three writes before: 1.5x nginx's system calls per streamed call).
TEST_CASE("a stream the child sent in one piece reaches the client in one write", "[http]") {
  Door door;
  RawClient c(door.port());
  // A first call on this connection: its segments are not counted.
  c.send(post("/v1/chat/completions", chat_body("kev", "hello")));
  c.read_until("\"hello\"");
  const auto before = c.data_segments_in();
  c.send(post("/v1/chat/completions", chat_body("kev", "stream_whole", true)));
  const auto all = c.read_until("\r\n0\r\n");  // (the trailers are in the same segment as the last chunk)
  CHECK(all.find("chunk-2") != std::string::npos);
  CHECK(count_of(all, "X-Kevlaya-Swap-Ms: ") == 3);  // the first answer's head, the stream's head, its trailer
  CHECK(c.data_segments_in() - before == 1);
}

// RFC 9112 6.1: a response to HTTP/1.0 must not be chunked (a 1.0 client reads the chunk sizes as
// the body); the stream is the bytes themselves, ended by the door closing the connection.
TEST_CASE("a stream to an HTTP/1.0 client is not chunked: it ends with the connection", "[http]") {
  Door door;
  RawClient c(door.port());
  const std::string body = chat_body("kev", "stream", true);
  c.send("POST /v1/chat/completions HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n"
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  const auto first = c.read_until("chunk-1");
  REQUIRE(first.find("chunk-1") != std::string::npos);
  CHECK(first.rfind("HTTP/1.0 200", 0) == 0);
  CHECK(first.find("Transfer-Encoding") == std::string::npos);
  CHECK(first.find("Connection: keep-alive") == std::string::npos);  // it cannot be kept alive
  door.upstream().release_second.set();
  CHECK(c.wait_closed(10s));
  const auto& all = c.received();
  const auto body_at = all.find("\r\n\r\n") + 4;
  // The SSE bytes at once (an event or a comment), no chunk size line before them.
  CHECK((all.compare(body_at, 5, "data:") == 0 || all.compare(body_at, 1, ":") == 0));
  CHECK(all.find("data: [DONE]") != std::string::npos);
  CHECK(all.find("\r\n0\r\n") == std::string::npos);  // no last chunk
}

TEST_CASE("a Transfer-Encoding in an HTTP/1.0 request is bad framing: 400", "[http]") {
  Door door;
  RawClient c(door.port());
  c.send("POST /v1/chat/completions HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  const auto got = c.read_until("\r\n\r\n");
  CHECK(got.rfind("HTTP/1.", 0) == 0);
  CHECK(got.find(" 400 Bad Request\r\n") == 8);
  CHECK(c.wait_closed(10s));
  CHECK(door.upstream().requests == 0);
}

TEST_CASE("a client that disconnects cancels its upstream request", "[http]") {
  Door door;
  {
    RawClient c(door.port());
    c.send(post("/v1/chat/completions", chat_body("kev", "stream_hold", true)));
    REQUIRE(c.read_until("chunk-1").find("chunk-1") != std::string::npos);
    c.close();
  }
  // The child is silent now; only the door noticing the hang-up can close its connection.
  CHECK(door.upstream().saw_disconnect.wait(10s));
  // The slot came back: the next request is served.
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
}

TEST_CASE("a streaming client waiting on a swap receives SSE keep-alive comments", "[http]") {
  DoorOptions o;
  o.load_ms = 1500;
  Door door(o);
  RawClient c(door.port());
  c.send(post("/v1/chat/completions", chat_body("laya", "stream", true)));
  auto got = c.read_until(": loading laya");
  REQUIRE(got.find(": loading laya") != std::string::npos);
  CHECK(got.find("200 OK") != std::string::npos);
  door.upstream().release_second.set();
  auto all = c.read_until("\r\n0\r\n");
  CHECK(all.find("chunk-1") != std::string::npos);
  CHECK(all.find("data: [DONE]") != std::string::npos);
  CHECK(all.find("X-Kevlaya-Swap-Ms") != std::string::npos);  // trailer after the stream
}

TEST_CASE("curl -N as an OpenAI-style client works unchanged", "[http]") {
  Door door;
  door.upstream().release_second.set();  // let the stream run straight through
  const std::string url = "http://127.0.0.1:" + std::to_string(door.port()) + "/v1/chat/completions";
  auto streamed = run_command("curl -sS -N --max-time 20 -H 'Content-Type: application/json' -d '" +
                              chat_body("kev", "stream", true) + "' " + url);
  REQUIRE(streamed.exit_code == 0);
  CHECK(streamed.output.find("data: {\"choices\":[{\"delta\":{\"content\":\"chunk-1\"}}]}") !=
        std::string::npos);
  CHECK(streamed.output.find("data: [DONE]") != std::string::npos);
  auto plain = run_command("curl -sS -i --max-time 20 -H 'Content-Type: application/json' -d '" +
                           chat_body("kev") + "' " + url);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.output.find("X-Kevlaya-Model: kev") != std::string::npos);
  CHECK(plain.output.find("\"content\":\"hello\"") != std::string::npos);
}
