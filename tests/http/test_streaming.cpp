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
