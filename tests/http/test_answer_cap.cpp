// Issue 32 item 3: a non-streamed answer was buffered whole with no limit (a remote sending 1 GiB
// raised the door to 1.06 GB, and it stayed there); error bodies too. Now limits.max_answer_bytes
// bounds what the door holds: a plain answer past it is relayed chunked as it comes, one that must
// be whole (an error body, a translated API's answer) is refused with 502 naming the limit.
#include <catch2/catch.hpp>

#include <fstream>

#include "door_fixture.hpp"
#include "support/proc_probes.hpp"  // peak_rss_kib

using namespace kevlaya::test;

namespace {

constexpr std::int64_t kCap = 1 << 20;

DoorOptions capped() {
  DoorOptions o;
  o.max_answer_bytes = kCap;
  return o;
}


}  // namespace

TEST_CASE("answer cap: an error body past limits.max_answer_bytes is 502 naming the limit, and memory does not follow it",
          "[http]") {
  Door door(capped());
  door.upstream().huge_bytes = 256ull << 20;
  const long before = peak_rss_kib();
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "huge_error"));
  const long grew_mib = (peak_rss_kib() - before) / 1024;
  INFO(r.body);
  CHECK(r.status == 502);
  const auto err = r.json_body()["error"];
  REQUIRE(err.is_object());
  CHECK(err["message"].get<std::string>().find("limits.max_answer_bytes") != std::string::npos);
  CHECK(err["message"].get<std::string>().find(std::to_string(kCap)) != std::string::npos);
  INFO("peak RSS grew " << grew_mib << " MiB while the child sent 256 MiB");
  CHECK(grew_mib < 64);
}

TEST_CASE("answer cap: a plain answer past the cap is relayed whole, chunked, not held", "[http]") {
  Door door(capped());
  door.upstream().huge_bytes = static_cast<std::uint64_t>(3 * kCap + 5);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "huge"));
  CHECK(r.status == 200);
  CHECK(r.header("transfer-encoding") == "chunked");
  CHECK(r.header("x-kevlaya-model") == "kev");
  CHECK(r.body.size() == static_cast<std::size_t>(3 * kCap + 5));
  CHECK(r.body.rfind("{\"x\":\"aaa", 0) == 0);
  CHECK(r.body.substr(r.body.size() - 3) == "a\"}");
}

TEST_CASE("answer cap: a translated (Ollama) answer past the cap is 502 in Ollama's shape", "[http]") {
  Door door(capped());
  door.upstream().huge_bytes = static_cast<std::uint64_t>(2 * kCap);
  const json b = {{"model", "kev"}, {"stream", false}, {"messages", {{{"role", "user"}, {"content", "test_mode:huge"}}}}};
  auto r = http_request(door.port(), "POST", "/api/chat", b.dump());
  INFO(r.body);
  CHECK(r.status == 502);
  REQUIRE(r.json_body()["error"].is_string());
  CHECK(r.json_body()["error"].get<std::string>().find("limits.max_answer_bytes") != std::string::npos);
}

TEST_CASE("answer cap: an answer under the cap is buffered and sent with Content-Length as before", "[http]") {
  Door door(capped());
  door.upstream().huge_bytes = static_cast<std::uint64_t>(kCap);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "huge"));
  CHECK(r.status == 200);
  CHECK(r.header("content-length") == std::to_string(kCap));
  CHECK(r.body.size() == static_cast<std::size_t>(kCap));
}
