// Tool calls on Ollama's /api/chat through the door's own mapping: the round trip's messages reach
// the child in OpenAI's shape, and a call the child streams in pieces reaches the client whole.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "door_fixture.hpp"
#include "http/ollama.hpp"

using namespace kevlaya::test;
using kevlaya::http::OllamaKind;

namespace {

std::vector<json> lines_of(const std::string& ndjson) {
  std::istringstream in(ndjson);
  std::vector<json> out;
  for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
  return out;
}

}  // namespace

// Regression: each OpenAI tool-call delta became an Ollama tool call of its own (the first with
// arguments {} and the name, the others nameless), so the ollama client saw three broken calls.
TEST_CASE("ollama: a tool call streamed in pieces reaches the client as one whole call", "[http][tools]") {
  kevlaya::http::OllamaStream s(OllamaKind::chat, "kev-tools");
  const std::string sse =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","
      "\"function\":{\"name\":\"pick_strategy\",\"arguments\":\"{\\\"strategy\\\": \\\"\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"escalate\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n";
  std::string out;
  for (char ch : sse) out += s.feed(std::string(1, ch));
  INFO(out);
  const auto got = lines_of(out);
  std::vector<json> calls;
  for (const auto& l : got)
    if (l["message"].contains("tool_calls"))
      for (const auto& c : l["message"]["tool_calls"]) calls.push_back(c);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0]["function"]["name"] == "pick_strategy");
  CHECK(calls[0]["function"]["arguments"] == json{{"strategy", "escalate"}});
  REQUIRE(!got.empty());
  CHECK(got.back()["done"] == true);
  CHECK(got.back()["done_reason"] == "stop");  // Ollama's word for it, not the child's "tool_calls"
  CHECK(std::count_if(got.begin(), got.end(), [](const json& l) { return l["done"] == true; }) == 1);
}

TEST_CASE("ollama: two streamed calls and a stream without a finish_reason keep every call whole", "[http][tools]") {
  kevlaya::http::OllamaStream s(OllamaKind::chat, "kev-tools");
  std::string out = s.feed(
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\"\"}},"
      "{\"index\":1,\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\": 1}\"}}]}}]}\n\n");
  CHECK(out.empty());  // nothing whole yet
  out += s.feed("data: [DONE]\n\n");
  INFO(out);
  const auto got = lines_of(out);
  REQUIRE(got.size() == 2);
  const auto& calls = got[0]["message"]["tool_calls"];
  REQUIRE(calls.size() == 2);
  CHECK(calls[0]["function"] == json{{"name", "a"}, {"arguments", {{"x", 1}}}});
  CHECK(calls[1]["function"] == json{{"name", "b"}, {"arguments", json::object()}});
  CHECK(got[1]["done"] == true);
}

TEST_CASE("ollama: a tool round trip's messages reach the child as OpenAI tool_calls and a tool message", "[http][tools]") {
  const json call = {{"function", {{"name", "pick_strategy"}, {"arguments", {{"strategy", "retry"}}}}}};
  const json body = {{"model", "kev-tools"},
                     {"stream", false},
                     {"messages", {{{"role", "user"}, {"content", "a 503 during a deploy"}},
                                   {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call}}},
                                   {{"role", "tool"}, {"content", "recorded"}, {"tool_name", "pick_strategy"}}}}};
  auto m = kevlaya::http::ollama_to_openai(OllamaKind::chat, body, "kev-tools", 512);
  REQUIRE(m);
  const auto& msgs = (*m)["messages"];
  REQUIRE(msgs.size() == 3);
  const auto& tc = msgs[1]["tool_calls"];
  REQUIRE(tc.size() == 1);
  CHECK(tc[0]["type"] == "function");
  CHECK(tc[0]["function"]["name"] == "pick_strategy");
  CHECK(json::parse(tc[0]["function"]["arguments"].get<std::string>()) == json{{"strategy", "retry"}});
  CHECK(msgs[2]["role"] == "tool");
  CHECK(msgs[2]["content"] == "recorded");

  const std::string answer =
      R"({"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",)"
      R"("function":{"name":"pick_strategy","arguments":"{\"strategy\": \"retry\"}"}}]},"finish_reason":"tool_calls"}]})";
  const auto o = json::parse(kevlaya::http::ollama_answer(OllamaKind::chat, answer, "kev-tools"));
  REQUIRE(o["message"]["tool_calls"].size() == 1);
  CHECK(o["message"]["tool_calls"][0]["function"]["arguments"] == json{{"strategy", "retry"}});
}
