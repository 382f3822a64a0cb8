// Every input error is a 400 in the caller's API shape naming the field (docs/http.md, "Errors"):
// every route that reads a body is sent each field it reads with every JSON type in turn; the door
// itself never answers 5xx, and each refusal has its API's shape (before: nlohmann type errors
// reached the catch-all: 500 "internal error", OpenAI-shaped even on /api/*).
#include <catch2/catch.hpp>

#include <cctype>

#include "common/bounded_json.hpp"
#include "door_fixture.hpp"
#include "http/apis.hpp"
#include "http/pipeline_runner.hpp"

using namespace kevlaya::test;
using kevlaya::http::ApiShape;

namespace {

// One of each JSON type (and shapes of them the readers treat apart).
const std::vector<json>& wrong_values() {
  static const std::vector<json> v = {json("x"), json(""), json(5), json(-2.5), json(true), json(nullptr),
                                      json::array(), json::array({1}), json::object(), json::object({{"a", 1}})};
  return v;
}

// Sets the value at `path` ("messages/0/role") in a copy of `base`.
json with(json base, const std::string& path, const json& v) {
  base[json::json_pointer("/" + path)] = v;
  return base;
}

// Whether `body` is an error in `shape`'s form, with a message.
bool shaped(ApiShape shape, const json& body) {
  if (!body.is_object() || !body.contains("error")) return false;
  const json& e = body["error"];
  const auto text = [&](const char* key) { return e.is_object() && e.contains(key) && e[key].is_string(); };
  switch (shape) {
    case ApiShape::ollama: return e.is_string() && !e.get<std::string>().empty();
    case ApiShape::anthropic: return body.value("type", "") == "error" && text("type") && text("message");
    default: return text("message");
  }
}

// Whether an error body says the child sent it (src "upstream"): the door relays those as they are.
bool from_upstream(const json& body) {
  return body.is_object() && body.contains("error") && body["error"].is_object() &&
         body["error"].value("src", "") == "upstream";
}

struct Probe {
  std::string target;
  ApiShape shape;
  json base;                        // a valid body
  std::vector<std::string> fields;  // JSON pointers (without the leading '/') of what the door reads
};

std::vector<Probe> probes() {
  const json chat = {{"model", "kev"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  std::vector<Probe> out;
  for (const auto* target : {"/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions", "/completion",
                             "/v1/chat/completions/input_tokens", "/chat/completions/input_tokens", "/v1/responses",
                             "/responses", "/v1/responses/input_tokens", "/responses/input_tokens", "/v1/messages",
                             "/v1/messages/count_tokens", "/v1/embeddings", "/embeddings", "/embedding", "/v1/rerank",
                             "/v1/reranking", "/rerank", "/reranking", "/tokenize", "/detokenize", "/apply-template",
                             "/infill"})
    out.push_back({target, kevlaya::http::shape_of_path(target), chat, {"model", "stream", "keep_alive"}});
  out.push_back({"/upstream/kev/tokenize", ApiShape::openai, {{"content", "hi"}}, {"stream", "content"}});
  const json tc = {{"function", {{"name", "f"}, {"arguments", {{"a", 1}}}}}};
  const json ochat = {{"model", "kev"}, {"stream", false},
                      {"messages", {{{"role", "user"}, {"content", "hi"}, {"images", json::array()}, {"tool_calls", {tc}}}}},
                      {"options", {{"temperature", 0.5}}}};
  out.push_back({"/api/chat", ApiShape::ollama, ochat,
                 {"model", "name", "messages", "messages/0", "messages/0/role", "messages/0/content", "messages/0/images",
                  "messages/0/tool_calls", "messages/0/tool_calls/0", "messages/0/tool_calls/0/function",
                  "messages/0/tool_calls/0/function/name", "messages/0/tool_calls/0/function/arguments", "tools",
                  "stream", "keep_alive", "format", "options", "options/num_ctx", "options/temperature", "options/top_k",
                  "options/seed", "options/stop"}});
  const json gen = {{"model", "kev"}, {"stream", false}, {"prompt", "hi"}};
  out.push_back({"/api/generate", ApiShape::ollama, gen,
                 {"model", "prompt", "raw", "system", "images", "stream", "keep_alive", "format", "options",
                  "options/num_predict"}});
  out.push_back({"/api/embed", ApiShape::ollama, {{"model", "kev"}, {"input", "hi"}}, {"model", "input", "keep_alive"}});
  out.push_back({"/api/embeddings", ApiShape::ollama, {{"model", "kev"}, {"prompt", "hi"}}, {"model", "prompt"}});
  out.push_back({"/api/show", ApiShape::ollama, {{"model", "kev"}}, {"model", "name"}});
  out.push_back({"/v1/pipelines/decide-verify/runs", ApiShape::openai, {{"input", "hi"}}, {"input", "candidates", "id", "vars"}});
  out.push_back({"/v1/pipelines/decide-verify/runs?async=1", ApiShape::openai, {{"input", "hi"}}, {"input", "candidates", "id", "vars"}});
  return out;
}

// A runner that accepts anything: the runs route's own reading is what is probed here.
class EchoRunner : public kevlaya::http::PipelineRunner {
 public:
  boost::asio::awaitable<kevlaya::Result<json>> run_task(std::string, json task) override {
    co_return json{{"verdict", "pass"}, {"input", task.value("input", json())}};
  }
};

}  // namespace

TEST_CASE("typed fields: every route, every field it reads, every JSON type: no 5xx from the door, its API's error shape",
          "[http]") {
  DoorOptions o;
  o.runner = std::make_shared<EchoRunner>();
  Door door(o);
  int refused = 0;
  for (const auto& p : probes()) {
    for (const auto& field : p.fields) {
      for (const auto& v : wrong_values()) {
        const auto body = with(p.base, field, v);
        INFO(p.target << " " << body.dump());
        const auto r = http_request(door.port(), "POST", p.target, body.dump());
        INFO(r.status << " " << r.body);
        const auto j = r.json_body();
        if (r.status >= 500) CHECK(from_upstream(j));
        if (r.status < 400) continue;
        const bool ok = shaped(p.shape, j);
        CHECK(ok);
        if (!ok || p.shape != ApiShape::ollama || r.status != 400) continue;
        ++refused;
        // An Ollama refusal names what it refuses (the leaf key, or its list for an element).
        const auto leaf = field.substr(field.find_last_of('/') + 1);
        const auto named = std::isdigit(static_cast<unsigned char>(leaf[0])) ? field.substr(0, field.find_last_of('/')) : field;
        CHECK(j["error"].get<std::string>().find(named.substr(named.find_last_of('/') + 1)) != std::string::npos);
      }
    }
  }
  CHECK(refused > 100);  // the matrix did reach the readers
}

TEST_CASE("typed fields: the Ollama refusals of the issue are 400s naming the field", "[http]") {
  Door door;
  const auto post = [&](const std::string& target, const std::string& body) {
    return http_request(door.port(), "POST", target, body);
  };
  const auto role = post("/api/chat", R"({"model":"kev","messages":[{"role":5,"content":"hi"}]})");
  CHECK(role.status == 400);
  CHECK(role.json_body()["error"] == "\"messages[0].role\" must be a string, not number");
  const auto calls = post("/api/chat", R"({"model":"kev","messages":[{"role":"assistant","tool_calls":[1]}]})");
  CHECK(calls.status == 400);
  CHECK(calls.json_body()["error"] == "\"messages[0].tool_calls[0]\" must be an object");
  const auto raw = post("/api/generate", R"({"model":"kev","prompt":"hi","raw":"yes"})");
  CHECK(raw.status == 400);
  CHECK(raw.json_body()["error"] == "\"raw\" must be true or false, not string");
  const auto up = post("/upstream/kev/tokenize", R"({"content":"hi","stream":[]})");
  CHECK(up.status == 200);  // forwarded as sent: the child judges a body the door does not read
}

TEST_CASE("strict JSON: a NUL byte after the document is refused on every body reader", "[http]") {
  DoorOptions o;
  o.runner = std::make_shared<EchoRunner>();
  Door door(o);
  const std::string tail = std::string("\0garbage", 8);
  for (const auto* target : {"/v1/chat/completions", "/api/chat", "/api/generate", "/api/show", "/v1/pipelines/decide-verify/runs",
                             "/v1/pipelines/decide-verify/runs?async=1"}) {
    INFO(target);
    const std::string body = std::string(R"({"model":"kev","input":"hi","prompt":"hi","messages":[]})") + tail;
    const auto r = http_request(door.port(), "POST", target, body);
    CHECK(r.status == 400);
  }
  CHECK_FALSE(kevlaya::parse_json_bounded(std::string("{}\0", 3)));
  CHECK_FALSE(kevlaya::parse_json_bounded(std::string("{\"a\":\"\0\"}", 9)));
  CHECK(kevlaya::parse_json_bounded("{\"a\":\"\\u0000\"}"));  // an escaped NUL is a character like any other
}
