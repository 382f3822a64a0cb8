// Ollama's API through the door: listing, chat/generate/embed translated onto the child's OpenAI
// endpoints (whole and NDJSON-streamed), options and format mapped, refusals Ollama-shaped.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "door_fixture.hpp"
#include "http/ollama.hpp"
#include "support/models.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
using kevlaya::http::OllamaKind;

TEST_CASE("ollama: options, format and a schema map to llama-server's fields", "[http]") {
  const json body = {{"model", "kev"},
                     {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                     {"stream", false},
                     {"format", {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}}},
                     {"options", {{"temperature", 0.5}, {"top_p", 0.9}, {"seed", 7}, {"num_predict", 12},
                                  {"stop", {"\n"}}, {"num_ctx", 256}}},
                     {"keep_alive", "5m"}};
  auto m = kevlaya::http::ollama_to_openai(OllamaKind::chat, body, "kev", 256);
  REQUIRE(m);
  CHECK((*m)["temperature"] == 0.5);
  CHECK((*m)["top_p"] == 0.9);
  CHECK((*m)["seed"] == 7);
  CHECK((*m)["max_tokens"] == 12);
  CHECK((*m)["stop"] == json::array({"\n"}));
  CHECK((*m)["stream"] == false);
  CHECK((*m)["response_format"]["type"] == "json_schema");
  CHECK((*m)["response_format"]["json_schema"]["schema"] == body["format"]);
  json j = body;
  j["format"] = "json";
  auto as_json = kevlaya::http::ollama_to_openai(OllamaKind::chat, j, "kev", 256);
  REQUIRE(as_json);
  CHECK(as_json.value()["response_format"]["type"] == "json_object");
  j["options"]["num_ctx"] = 257;
  auto over = kevlaya::http::ollama_to_openai(OllamaKind::chat, j, "kev", 256);
  REQUIRE(!over);
  CHECK(over.error().message.find("num_ctx 257") != std::string::npos);
  j["options"]["num_ctx"] = 100;
  j["keep_alive"] = "soon";
  CHECK(!kevlaya::http::ollama_to_openai(OllamaKind::chat, j, "kev", 256));
}

TEST_CASE("ollama: a format schema and tools reach the child with their properties in the caller's order", "[http]") {
  // llama-server's grammar makes the model write a schema's properties in the listed order.
  const std::string raw =
      R"({"model":"kev","messages":[{"role":"user","content":"hi"}],"stream":false,)"
      R"("format":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},)"
      R"("required":["zeta","alpha"]},"tools":[{"type":"function","function":{"name":"f","parameters":)"
      R"({"type":"object","properties":{"yy":{},"bb":{}}}}}]})";
  const json body = json::parse(raw);
  auto m = kevlaya::http::ollama_to_openai(OllamaKind::chat, body, "kev", 256);
  REQUIRE(m);
  const auto text = kevlaya::http::ollama_request_text(*m, raw);
  CHECK(text.find("\"zeta\"") < text.find("\"alpha\""));
  CHECK(text.find("\"yy\"") < text.find("\"bb\""));
  const json sent = json::parse(text);
  CHECK(sent["response_format"]["json_schema"]["schema"] == body["format"]);
  CHECK(sent["tools"] == body["tools"]);
  CHECK(sent["model"] == "kev");
}

TEST_CASE("ollama: the child's SSE becomes NDJSON lines split anywhere, then one done line", "[http]") {
  auto times = std::make_shared<kevlaya::http::CallTimes>();
  times->load_ms = 250;
  kevlaya::http::OllamaStream s(OllamaKind::generate, "kev", times);
  const std::string sse =
      "data: {\"choices\":[{\"delta\":{\"content\":\"Once\"}}]}\n\n"
      ": comment\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\" upon\"},\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2},\"timings\":{\"prompt_ms\":1.0,\"predicted_ms\":2.0}}\n\n"
      "data: [DONE]\n\n";
  std::string out;
  for (char ch : sse) out += s.feed(std::string(1, ch));  // byte by byte: framing is buffered
  std::istringstream lines(out);
  std::vector<json> got;
  for (std::string l; std::getline(lines, l);) got.push_back(json::parse(l));
  REQUIRE(got.size() == 3);
  CHECK(got[0]["response"] == "Once");
  CHECK(got[0]["done"] == false);
  CHECK(got[1]["response"] == " upon");
  CHECK(got[2]["done"] == true);
  CHECK(got[2]["done_reason"] == "length");
  CHECK(got[2]["eval_count"] == 2);
  CHECK(got[2]["prompt_eval_count"] == 3);
  CHECK(got[2]["eval_duration"] == 2000000);
  CHECK(got[2]["load_duration"] == 250000000);
  CHECK(got[2]["total_duration"] >= 253000000);
}

// Regression (issue 33): load_duration was always 0 and total_duration left out the queue and load.
TEST_CASE("ollama: durations come from the door's load and the child's timings", "[http]") {
  const std::string a = R"({"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],)"
                        R"("usage":{"prompt_tokens":3,"completion_tokens":2},"timings":{"prompt_ms":1.5,"predicted_ms":2.0}})";
  kevlaya::http::CallTimes t{std::chrono::steady_clock::now() - std::chrono::seconds(2), 1500};
  const auto j = json::parse(kevlaya::http::ollama_answer(OllamaKind::chat, a, "kev", &t));
  CHECK(j["load_duration"] == 1500000000);
  CHECK(j["prompt_eval_duration"] == 1500000);
  CHECK(j["eval_duration"] == 2000000);
  CHECK(j["total_duration"] >= 2000000000);  // arrival to answer: queue, load, prompt, generation
  CHECK(j["prompt_eval_count"] == 3);
  CHECK(j["eval_count"] == 2);
  // Without usage (a raw completion), the counts come from the child's timings.
  const auto raw = json::parse(kevlaya::http::ollama_answer(
      OllamaKind::generate, R"({"choices":[{"text":"x"}],"timings":{"prompt_n":4,"predicted_n":5}})", "kev", &t));
  CHECK(raw["prompt_eval_count"] == 4);
  CHECK(raw["eval_count"] == 5);
}

TEST_CASE("ollama: /api/chat is translated to the child's /v1/chat/completions and back", "[http]") {
  Door door;
  json b = {{"model", "k:latest"}, {"stream", false}, {"messages", {{{"role", "user"}, {"content", "hi"}}}},
            {"options", {{"num_predict", 5}}}};
  auto r = http_request(door.port(), "POST", "/api/chat", b.dump());
  REQUIRE(r.status == 200);
  const auto j = r.json_body();
  CHECK(j["model"] == "k:latest");
  CHECK(j["message"]["role"] == "assistant");
  CHECK(j["message"]["content"] == "hello");
  CHECK(j["done"] == true);
  CHECK(j["eval_duration"] == 20000000);
  CHECK(r.header("x-kevlaya-model") == "kev");
  CHECK(j["load_duration"] == std::stoll(r.header("x-kevlaya-swap-ms")) * 1000000);  // kev was started for it
  // What the child saw: an OpenAI chat body naming the profile.
  auto echo = http_request(door.port(), "POST", "/api/generate",
                           json{{"model", "laya"}, {"prompt", "p"}, {"system", "s"}, {"stream", false}}.dump());
  REQUIRE(echo.status == 200);
  CHECK(echo.json_body()["response"] == "hello");
}

TEST_CASE("ollama: /api/chat streams NDJSON (stream defaults to true), after a swap", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  RawClient c(door.port());
  json b = {{"model", "laya"}, {"messages", {{{"role", "user"}, {"content", "test_mode:stream"}}}}};
  c.send(post("/api/chat", b.dump()));
  auto first = c.read_until("chunk-1");
  CHECK(first.find("application/x-ndjson") != std::string::npos);
  door.upstream().release_second.set();
  auto all = c.read_until("\r\n0\r\n");
  CHECK(all.find("{\"created_at\"") != std::string::npos);
  CHECK(all.find("\"done\":true") != std::string::npos);
}

TEST_CASE("ollama: tags, ps, show, version, pull and create are refused Ollama-shaped", "[http]") {
  Door door;
  auto tags = http_request(door.port(), "GET", "/api/tags").json_body();
  REQUIRE(tags["models"].size() == 2);
  CHECK(tags["models"][0]["name"] == "kev");
  CHECK(http_request(door.port(), "GET", "/api/ps").json_body()["models"].empty());
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  auto ps = http_request(door.port(), "GET", "/api/ps").json_body();
  REQUIRE(ps["models"].size() == 1);
  CHECK(ps["models"][0]["name"] == "kev");
  CHECK(ps["models"][0].contains("size_vram"));
  auto show = http_request(door.port(), "POST", "/api/show", R"({"model":"k"})");
  REQUIRE(show.status == 200);
  CHECK(show.json_body()["details"]["format"] == "gguf");
  CHECK(http_request(door.port(), "GET", "/api/version").json_body()["version"].is_string());
  for (const char* p : {"/api/pull", "/api/create"}) {
    auto r = http_request(door.port(), "POST", p, R"({"model":"x"})");
    CHECK(r.status == 501);
    CHECK(r.json_body()["error"].is_string());
  }
  auto unknown = http_request(door.port(), "POST", "/api/chat", R"({"model":"nope","messages":[]})");
  CHECK(unknown.status == 404);
  CHECK(unknown.json_body()["error"].get<std::string>().find("unknown model 'nope'; known models: kev") == 0);
}

// Regression (bounded input): one SSE event without its end grew the mapper's buffer without limit.
TEST_CASE("ollama: an SSE event larger than the bound ends the stream with an error line, buffering nothing more", "[http]") {
  kevlaya::http::OllamaStream s(OllamaKind::chat, "kev");
  CHECK(s.feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n").find("\"a\"") != std::string::npos);
  std::string out;
  const std::string chunk(1 << 20, 'x');
  out += s.feed("data: {\"choices\":[{\"delta\":{\"content\":\"");
  for (std::size_t i = 0; i <= kevlaya::http::OllamaStream::kMaxEventBytes >> 20; ++i) out += s.feed(chunk);
  INFO(out.substr(0, 300));
  REQUIRE(!out.empty());
  CHECK(json::parse(out)["error"].get<std::string>().find("over 8 MiB") != std::string::npos);
  CHECK(s.feed(chunk).empty());  // done: nothing more is kept or sent
  CHECK(s.feed("\n\ndata: [DONE]\n\n").empty());
}

// /api/ps answers from the plan in force (made at start or reload), reading no model file on the
// door's thread (before: every GGUF header again per call, and 0 bytes once a file had moved).
TEST_CASE("ollama: /api/ps reports the plan's bill without reading the model file again", "[http][e2e]") {
  TempDir dir("ollama-ps-plan");
  const auto model = dir / "kev.gguf";
  std::filesystem::copy_file(tiny_llama(), model);
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            model.string() + "\nngl: 99\nctx: 256\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\ngpu:\n  vram_mib: 3000\n");
  Serve serve(dir / "kevlaya.yaml");
  REQUIRE(http_request(serve.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  const auto status = http_request(serve.port(), "GET", "/status").json_body();
  INFO(status.dump());
  const double planned_mib = status["gpu"]["plan"]["kev"]["total_mib"].get<double>();
  std::filesystem::rename(model, dir / "moved.gguf");  // the running child keeps it open
  const auto ps = http_request(serve.port(), "GET", "/api/ps").json_body();
  INFO(ps.dump());
  REQUIRE(ps["models"].size() == 1);
  const double vram = ps["models"][0]["size_vram"].get<double>();
  CHECK(planned_mib > 0);
  CHECK(std::abs(vram / (1 << 20) - planned_mib) < 0.01);
  CHECK(ps["models"][0]["size"].get<double>() >= vram);
}
