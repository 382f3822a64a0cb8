// Every model API end to end: `kevlaya-orch serve` with two children that rotate (a swap before
// most calls), driven by curl, against the stand-in and (tag [real]) llama-server.
#include <catch2/catch.hpp>

#include <signal.h>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

struct Answer {
  int status = 0;
  std::string body;
  json j() const { return json::parse(body, nullptr, false); }
};

class Api {
 public:
  explicit Api(int port) : base_("http://127.0.0.1:" + std::to_string(port)) {}
  Answer call(const std::string& method, const std::string& path, const std::string& body = "") const {
    std::string cmd = "curl -sS -N --max-time 120 -X " + method + " -w '\\n%{http_code}' ";
    if (!body.empty()) cmd += "-H 'Content-Type: application/json' -d '" + body + "' ";
    auto r = run_command(cmd + "'" + base_ + path + "'");
    const auto nl = r.output.rfind('\n');
    Answer a;
    a.body = r.output.substr(0, nl == std::string::npos ? 0 : nl);
    a.status = nl == std::string::npos ? 0 : std::atoi(r.output.c_str() + nl + 1);
    return a;
  }

 private:
  std::string base_;
};

std::size_t lines_with(const std::string& text, const std::string& needle) { return count_of(text, needle); }

void anthropic_and_responses(const Api& api) {
  const std::string msg = R"({"model":"k","max_tokens":8,"messages":[{"role":"user","content":"Once"}]})";
  auto m = api.call("POST", "/v1/messages", msg);
  INFO(m.body);
  CHECK(m.status == 200);
  CHECK(m.j()["type"] == "message");
  CHECK(m.j()["content"][0]["type"] == "text");
  auto ms = api.call("POST", "/v1/messages",
                     R"({"model":"laya","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"Once"}]})");
  INFO(ms.body);
  CHECK(ms.status == 200);
  CHECK(ms.body.find("event: message_start") != std::string::npos);
  CHECK(ms.body.find("event: message_stop") != std::string::npos);
  auto ct = api.call("POST", "/v1/messages/count_tokens", msg);
  INFO(ct.body);
  CHECK(ct.j()["input_tokens"].is_number_integer());
  auto bad = api.call("POST", "/v1/messages", R"({"model":"nope","max_tokens":8,"messages":[]})");
  CHECK(bad.status == 404);
  CHECK(bad.j()["type"] == "error");
  CHECK(bad.j()["error"]["type"] == "not_found_error");
  auto r = api.call("POST", "/v1/responses", R"({"model":"laya","max_output_tokens":8,"input":"Once"})");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.j()["object"] == "response");
  auto rs = api.call("POST", "/v1/responses", R"({"model":"kev","stream":true,"max_output_tokens":8,"input":"Once"})");
  INFO(rs.body);
  CHECK(rs.body.find("event: response.created") != std::string::npos);
  CHECK(rs.body.find("event: response.completed") != std::string::npos);
  auto rt = api.call("POST", "/v1/responses/input_tokens", R"({"model":"laya","input":"Once"})");
  INFO(rt.body);
  CHECK(rt.j()["input_tokens"].is_number_integer());
  auto chat_tok = api.call("POST", "/v1/chat/completions/input_tokens",
                           R"({"model":"kev","messages":[{"role":"user","content":"Once"}]})");
  INFO(chat_tok.body);
  CHECK(chat_tok.j()["input_tokens"].is_number_integer());
}

void llama_native(const Api& api) {
  auto t = api.call("POST", "/tokenize", R"({"model":"laya","content":"Once upon"})");
  INFO(t.body);
  REQUIRE(t.status == 200);
  const auto toks = t.j()["tokens"];
  CHECK(!toks.empty());
  auto d = api.call("POST", "/detokenize", json{{"model", "kev"}, {"tokens", toks}}.dump());
  INFO(d.body);
  CHECK(d.status == 200);
  CHECK(d.j()["content"].get<std::string>().find("upon") != std::string::npos);
  auto e = api.call("POST", "/v1/embeddings", R"({"model":"emb","input":["hello","world"]})");
  INFO(e.body);
  CHECK(e.status == 200);
  CHECK(e.j()["data"].size() == 2);
  CHECK(!e.j()["data"][0]["embedding"].empty());
  auto en = api.call("POST", "/embedding", R"({"model":"emb","content":"hello"})");
  INFO(en.body);
  CHECK(en.status == 200);
  CHECK(en.j().is_array());
  // kev was started without --embeddings: the child's refusal passes through, clearly.
  auto no = api.call("POST", "/v1/embeddings", R"({"model":"kev","input":"hello"})");
  CHECK(no.status == 501);
  CHECK(no.j()["error"]["message"].get<std::string>().find("--embeddings") != std::string::npos);
  auto rr = api.call("POST", "/v1/rerank", R"({"model":"kev","query":"a","documents":["a","b"]})");
  CHECK(rr.status == 501);
  CHECK(rr.j()["error"]["message"].get<std::string>().find("--reranking") != std::string::npos);
  auto fim = api.call("POST", "/infill", R"({"model":"kev","input_prefix":"Once","input_suffix":"","n_predict":4})");
  INFO(fim.body);  // stories260K has no FIM tokens: llama-server refuses clearly, the stand-in fills
  CHECK((fim.j().contains("content") ||
         (fim.status == 501 && fim.j()["error"]["message"].get<std::string>().find("Infill") != std::string::npos)));
  auto p = api.call("GET", "/props?model=laya");
  INFO(p.body);
  CHECK(p.status == 200);
  CHECK(p.j().contains("default_generation_settings"));
  auto s = api.call("GET", "/slots?model=k");
  INFO(s.body);
  CHECK(s.status == 200);
  CHECK(s.j().is_array());
  auto u = api.call("GET", "/upstream/kev/health");
  CHECK(u.j()["status"] == "ok");
}

void ollama(const Api& api) {
  auto c = api.call("POST", "/api/chat",
                    R"({"model":"kev","stream":false,"options":{"num_predict":6,"seed":1},"messages":[{"role":"user","content":"Once"}]})");
  INFO(c.body);
  CHECK(c.status == 200);
  CHECK(c.j()["done"] == true);
  CHECK(c.j()["message"]["content"].is_string());
  // Honest timings (issue 33): counts and the child's durations; kev was resident (no load).
  CHECK(c.j()["prompt_eval_count"] > 0);
  CHECK(c.j()["eval_count"] > 0);
  CHECK(c.j()["load_duration"] == 0);
  CHECK(c.j()["total_duration"] >= c.j()["prompt_eval_duration"].get<std::int64_t>() +
                                       c.j()["eval_duration"].get<std::int64_t>());
  auto g = api.call("POST", "/api/generate", R"({"model":"laya","prompt":"Once","options":{"num_predict":6}})");
  INFO(g.body);
  CHECK(g.status == 200);
  CHECK(lines_with(g.body, "\"done\":false") >= 1);
  CHECK(lines_with(g.body, "\"done\":true") == 1);
  // laya was loaded for this call: its load shows, and the total holds it all.
  std::string lines = g.body;
  while (!lines.empty() && (lines.back() == '\n' || lines.back() == '\r')) lines.pop_back();
  const auto last = json::parse(lines.substr(lines.rfind('\n') + 1), nullptr, false);  // the done line
  REQUIRE((last.is_object() && last.contains("load_duration") && last.contains("eval_duration")));
  CHECK(last["load_duration"] > 0);
  CHECK(last["eval_count"] > 0);
  CHECK(last["total_duration"] >= last["load_duration"].get<std::int64_t>() +
                                      last["prompt_eval_duration"].get<std::int64_t>() +
                                      last["eval_duration"].get<std::int64_t>());
  auto e = api.call("POST", "/api/embed", R"({"model":"emb","input":"hello"})");
  INFO(e.body);
  CHECK(e.j()["embeddings"].size() == 1);
  auto big = api.call("POST", "/api/chat", R"({"model":"kev","options":{"num_ctx":4096},"messages":[]})");
  CHECK(big.status == 400);
  CHECK(big.j()["error"].get<std::string>().find("num_ctx") != std::string::npos);
  CHECK(api.call("GET", "/api/tags").j()["models"].size() == 3);
}

void exercise(const std::string& binary) {
  TempDir dir("http-apis");
  write_api_config(dir.path(), binary);
  Serve serve(dir / "kevlaya.yaml");
  Api api(serve.port());
  anthropic_and_responses(api);
  llama_native(api);
  ollama(api);
  INFO(serve.proc().log());
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("every model API through the door with swaps, against the stand-in", "[http][e2e]") {
  exercise(standin_binary().string());
}

TEST_CASE("every model API through the door with swaps, against the real llama-server", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  exercise(real);
}
