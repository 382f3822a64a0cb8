// loading_messages: reasoning for Anthropic streams (http/anthropic_wait.hpp), plain values.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <vector>

#include "http/anthropic_wait.hpp"

using kevlaya::http::AnthropicWait;
using json = nlohmann::json;

namespace {

// The data of each SSE event in `sse`, in order.
std::vector<json> events(const std::string& sse) {
  std::vector<json> out;
  for (auto at = sse.find("data: "); at != std::string::npos; at = sse.find("data: ", at + 1))
    out.push_back(json::parse(sse.substr(at + 6, sse.find('\n', at) - at - 6)));
  return out;
}

const std::string kChild =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"c\"}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

}  // namespace

TEST_CASE("anthropic wait: without a wait the child's stream passes unchanged") {
  AnthropicWait w("kev");
  CHECK(w.feed(kChild) == kChild);
}

TEST_CASE("anthropic wait: a wait is a thinking block at index 0, the child's blocks follow at 1, one message_start") {
  AnthropicWait w("kev");
  std::string shown = w.thinking("loading kev: 40 %");
  shown += w.thinking("loading kev: 80 %");
  const auto head = events(shown);
  REQUIRE(head.size() == 4);
  CHECK(head[0]["type"] == "message_start");
  CHECK(head[1]["content_block"]["type"] == "thinking");
  CHECK(head[2]["delta"]["thinking"] == "loading kev: 40 %\n");
  CHECK(head[3]["delta"]["thinking"] == "loading kev: 80 %\n");
  // The child's bytes arrive cut anywhere: whole events come out, none twice.
  std::string out;
  for (std::size_t i = 0; i < kChild.size(); i += 7) out += w.feed(std::string_view(kChild).substr(i, 7));
  const auto tail = events(out);
  REQUIRE(tail.size() == 6);  // the thinking block's stop, then the child's events less message_start
  CHECK(tail[0] == json{{"type", "content_block_stop"}, {"index", 0}});
  CHECK(tail[1]["type"] == "content_block_start");
  CHECK(tail[1]["index"] == 1);
  CHECK(tail[2]["index"] == 1);
  CHECK(tail[2]["delta"]["text"] == "Hi");
  CHECK(tail[3]["index"] == 1);
  CHECK(tail[4]["type"] == "message_delta");
  CHECK(tail[5]["type"] == "message_stop");
  CHECK(out.find("message_start") == std::string::npos);
}
