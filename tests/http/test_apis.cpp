// Every model API of llama-server through the door (apis.cpp's table): routed by model (body,
// query or path), aliases, swaps, streaming with each API's keep-alive, errors in each API's shape.
#include <catch2/catch.hpp>

#include "door_fixture.hpp"
#include "http/apis.hpp"

using namespace kevlaya::test;

namespace {

std::string body_for(const std::string& model, const std::string& mode = "") {
  json b = {{"model", model}, {"input", "hi"}};
  if (!mode.empty()) b["test_mode"] = mode;
  return b.dump();
}

}  // namespace

TEST_CASE("every POST model route of llama-server reaches the same path of the model's child, alias rewritten",
          "[http]") {
  Door door;
  for (const char* path : {"/v1/responses", "/v1/responses/input_tokens", "/v1/messages", "/v1/messages/count_tokens",
                           "/v1/embeddings", "/embedding", "/embeddings", "/v1/rerank", "/rerank", "/tokenize",
                           "/detokenize", "/infill", "/v1/chat/completions/input_tokens", "/apply-template",
                           "/chat/completions", "/completions"}) {
    INFO(path);
    // Alternating models: every route queues behind a swap.
    const std::string model = std::string(path).size() % 2 ? "k" : "laya";
    auto r = http_request(door.port(), "POST", path, body_for(model));
    REQUIRE(r.status == 200);
    CHECK(r.json_body()["target"] == path);
    CHECK(r.json_body()["echo"]["model"] == (model == "k" ? "kev" : "laya"));
    CHECK(r.header("x-kevlaya-model") == (model == "k" ? "kev" : "laya"));
    CHECK(!r.header("x-kevlaya-swap-ms").empty());
  }
}

TEST_CASE("GET /props and /slots are routed by ?model= (alias too), the query passed on", "[http]") {
  Door door;
  auto r = http_request(door.port(), "GET", "/props?model=laya");
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["target"] == "/props?model=laya");
  CHECK(r.header("x-kevlaya-model") == "laya");
  auto s = http_request(door.port(), "GET", "/slots?model=k&fail_on_no_slot=1");
  REQUIRE(s.status == 200);
  CHECK(s.json_body()["target"] == "/slots?model=k&fail_on_no_slot=1");
  CHECK(s.header("x-kevlaya-model") == "kev");
  CHECK(http_request(door.port(), "GET", "/props?model=nope").status == 404);
  CHECK(http_request(door.port(), "POST", "/props?model=kev", "{}").status == 405);
}

TEST_CASE("/upstream/{model}/{path} reaches any path of that model's child, body unchanged", "[http]") {
  Door door;
  auto g = http_request(door.port(), "GET", "/upstream/k/lora-adapters?x=1");
  REQUIRE(g.status == 200);
  CHECK(g.json_body()["target"] == "/lora-adapters?x=1");
  CHECK(g.header("x-kevlaya-model") == "kev");
  const std::string raw = R"({"model":"k","anything":[1,2]})";
  auto p = http_request(door.port(), "POST", "/upstream/laya/v1/whatever", raw);
  REQUIRE(p.status == 200);
  CHECK(p.json_body()["target"] == "/v1/whatever");
  CHECK(p.json_body()["echo"]["model"] == "k");  // raw: not rewritten
  CHECK(http_request(door.port(), "GET", "/upstream/nope/health").status == 404);
}

TEST_CASE("Anthropic routes answer errors in Anthropic's shape (door's own and the child's)", "[http]") {
  DoorOptions o;
  o.api_keys = {"sekret"};
  Door door(o);
  const std::vector<std::pair<std::string, std::string>> key = {{"X-Api-Key", "sekret"}};
  auto unauth = http_request(door.port(), "POST", "/v1/messages", body_for("kev"));
  CHECK(unauth.status == 401);
  CHECK(unauth.json_body()["type"] == "error");
  CHECK(unauth.json_body()["error"]["type"] == "authentication_error");
  auto unknown = http_request(door.port(), "POST", "/v1/messages", body_for("nope"), key);
  CHECK(unknown.status == 404);
  CHECK(unknown.json_body()["type"] == "error");
  CHECK(unknown.json_body()["error"]["type"] == "not_found_error");
  CHECK(unknown.json_body()["error"]["message"].get<std::string>().find("unknown model 'nope'") != std::string::npos);
  auto child = http_request(door.port(), "POST", "/v1/messages/count_tokens", body_for("kev", "error"), key);
  CHECK(child.status == 400);
  CHECK(child.json_body()["error"]["type"] == "invalid_request_error");
  CHECK(child.json_body()["error"]["message"] == "bad thing");
  // OpenAI-shaped routes keep OpenAI's shape.
  auto oai = http_request(door.port(), "POST", "/v1/embeddings", body_for("nope"), key);
  CHECK(oai.json_body()["error"]["type"] == "not_found_error");
  CHECK(!oai.json_body().contains("type"));
}

TEST_CASE("a route the model's llama-server lacks is a clear 404 naming it, not a hang", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/v1/responses", body_for("kev", "missing"));
  CHECK(r.status == 404);
  const auto msg = r.json_body()["error"]["message"].get<std::string>();
  CHECK(msg.find("POST /v1/responses") != std::string::npos);
  CHECK(msg.find("'kev'") != std::string::npos);
}

TEST_CASE("a streaming Anthropic client waiting on a swap gets `event: ping`, then the child's stream", "[http]") {
  DoorOptions o;
  o.load_ms = 1500;
  Door door(o);
  RawClient c(door.port());
  json b = {{"model", "laya"}, {"stream", true}, {"test_mode", "stream"}, {"messages", json::array()}};
  c.send(post("/v1/messages", b.dump()));
  auto got = c.read_until("event: ping");
  REQUIRE(got.find("event: ping\ndata: {\"type\": \"ping\"}") != std::string::npos);
  CHECK(got.find(": loading") == std::string::npos);
  door.upstream().release_second.set();
  auto all = c.read_until("\r\n0\r\n");
  CHECK(all.find("chunk-2") != std::string::npos);
}

TEST_CASE("a Responses stream waiting on a swap gets SSE comments, a stream error is `event: error`", "[http]") {
  CHECK(kevlaya::http::keepalive_event(kevlaya::http::ApiShape::responses, "m").rfind(": loading m", 0) == 0);
  const json err = {{"error", {{"message", "boom"}, {"code", "child_crashed"}}}};
  const auto ev = kevlaya::http::error_event(kevlaya::http::ApiShape::responses, 502, err);
  CHECK(ev.rfind("event: error\ndata: ", 0) == 0);
  CHECK(json::parse(ev.substr(ev.find('{')))["message"] == "boom");
  const auto an = kevlaya::http::error_event(kevlaya::http::ApiShape::anthropic, 502, err);
  CHECK(json::parse(an.substr(an.find('{')))["error"]["type"] == "api_error");
}

TEST_CASE("query_param decodes %XX and '+' and finds only whole keys", "[http]") {
  using kevlaya::http::query_param;
  CHECK(query_param("model=a%2Fb+c&x=1", "model") == "a/b c");
  CHECK(query_param("xmodel=1&model=2", "model") == "2");
  CHECK(query_param("model", "model").empty());
  CHECK(query_param("a=%zz", "a") == "%zz");
}
