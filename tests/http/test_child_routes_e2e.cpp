// The door forwards llama-server's own routes to a model's child after judging them (issue 46),
// end to end through `kevlaya-orch serve` with stand-in children (and the real llama-server from
// $KEVLAYA_LLAMA_SERVER where set): slot actions in the door's slot folder, the CORS proxy of a
// profile that turns it on, a child's error before its first byte as the HTTP status, and the
// children's own metrics on /metrics without a scrape ever starting a model.
#include <catch2/catch.hpp>

#include <signal.h>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// kev and laya on `binary` (the tiny model, ctx 256, one slot); `extra` is appended to each profile.
std::filesystem::path routes_write_config(const TempDir& dir, const std::string& binary, const std::string& extra,
                                   const std::string& top = "") {
  for (const std::string n : {"kev", "laya"})
    write_text(dir / "profiles" / (n + ".yaml"), "name: " + n + "\nbinary: " + binary + "\nmodel: " +
                                                    tiny_llama().string() +
                                                    "\nngl: 0\nctx: 256\nparallel: 1\nshared_base: false\n" + extra);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\n" + top);
  return dir / "kevlaya.yaml";
}

std::string routes_chat(const std::string& model, bool stream = false, const std::string& content = "Once") {
  return json{{"model", model}, {"stream", stream}, {"max_tokens", 4},
              {"messages", json::array({json{{"role", "user"}, {"content", content}}})}}
      .dump();
}

std::string long_prompt() {  // far more than the 256 tokens of the child's context
  std::string s;
  for (int i = 0; i < 400; ++i) s += "Once upon a time there was ";
  return s;
}

std::string state_of(int port, const std::string& model) {
  const auto status = http_request(port, "GET", "/status", "", {}, 5s).json_body();
  if (!status.is_object()) return {};
  for (const auto& p : status.value("profiles", json::array()))
    if (p.value("name", "") == model) return p.value("state", "");
  return {};
}

// The error object of the first SSE event that carries one ({} when none).
json stream_error(const std::string& body) {
  for (const auto& e : sse_events(body)) {
    const auto j = json::parse(e, nullptr, false);
    if (j.is_object() && j.contains("error")) return j["error"];
  }
  return json::object();
}

void slot_round_trip(const std::string& binary) {
  TempDir dir("child-slots");
  Serve serve(routes_write_config(dir, binary, "slot_cache:\n  enabled: true\n"));
  const int port = serve.port();
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", routes_chat("laya")).status == 200);
  auto saved = http_request(port, "POST", "/slots/0?action=save&model=laya", R"({"filename":"mine.bin"})");
  INFO(saved.body);
  CHECK(saved.status == 200);
  CHECK(saved.header("x-kevlaya-model") == "laya");
  CHECK(saved.json_body().value("filename", "") == "mine.bin");
  CHECK(std::filesystem::exists(dir / "state/slots/laya/mine.bin"));
  auto restored = http_request(port, "POST", "/slots/0?action=restore", R"({"model":"laya","filename":"mine.bin"})");
  INFO(restored.body);
  CHECK(restored.status == 200);
  CHECK(restored.header("x-kevlaya-model") == "laya");
  auto erased = http_request(port, "POST", "/slots/0?action=erase&model=laya", "");
  INFO(erased.body);
  CHECK(erased.status == 200);
  CHECK(erased.json_body().value("id_slot", -1) == 0);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

void streamed_error_before_first_byte(const std::string& binary) {
  TempDir dir("child-stream-400");
  Serve serve(routes_write_config(dir, binary, "", "loading_messages: comments\n"));
  const int port = serve.port();
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", routes_chat("kev")).status == 200);  // kev is ready
  auto r = http_request(port, "POST", "/v1/chat/completions", routes_chat("kev", true, long_prompt()));
  INFO(r.body);
  CHECK(r.status == 400);
  CHECK(r.header("x-kevlaya-model") == "kev");
  const auto body = r.json_body();
  REQUIRE(body.is_object());
  CHECK(body["error"].value("type", "") == "exceed_context_size_error");
  CHECK(body["error"].value("code", 0) == 400);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

void ready_child_metrics(const std::string& binary) {
  TempDir dir("child-metrics");
  Serve serve(routes_write_config(dir, binary, "extra_args: [--metrics]\n"));
  const int port = serve.port();
  auto idle = http_request(port, "GET", "/metrics");
  CHECK(idle.status == 200);
  CHECK(idle.body.find("llamacpp:") == std::string::npos);
  CHECK(state_of(port, "kev") == "stopped");  // the scrape started nothing
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", routes_chat("kev")).status == 200);
  auto busy = http_request(port, "GET", "/metrics");
  INFO(busy.body);
  CHECK(busy.body.find("# TYPE llamacpp:prompt_tokens_total counter\n") != std::string::npos);
  CHECK(busy.body.find("llamacpp:prompt_tokens_total{model=\"kev\"} ") != std::string::npos);
  CHECK(busy.body.find("llamacpp:prompt_tokens_total{model=\"laya\"}") == std::string::npos);
  CHECK(state_of(port, "laya") == "stopped");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("slot actions: save, restore and erase reach the named model's child in the door's slot folder",
          "[http][e2e]") {
  slot_round_trip(standin_binary().string());
}

TEST_CASE("slot actions: save, restore and erase on the real llama-server", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  slot_round_trip(real);
}

TEST_CASE("slot actions: a filename that could leave the slot folder is llama-server's 400, the child unasked",
          "[http][e2e]") {
  TempDir dir("child-slots-names");
  Serve serve(routes_write_config(dir, standin_binary().string(), "slot_cache:\n  enabled: true\n"));
  const int port = serve.port();
  const std::vector<std::string> names = {"../kevlaya.yaml", "sub/x.bin", "a\\u0000b", std::string(256, 'a'), ".."};
  for (const auto& name : names) {
    INFO(name.substr(0, 20));
    auto r = http_request(port, "POST", "/slots/0?action=save&model=kev", R"({"filename":")" + name + R"("})");
    INFO(r.body);
    CHECK(r.status == 400);
    const auto err = r.json_body()["error"];
    CHECK(err.value("code", 0) == 400);
    CHECK(err.value("message", "") == "Invalid filename");
    CHECK(err.value("type", "") == "invalid_request_error");
  }
  CHECK(http_request(port, "POST", "/slots/x?action=erase&model=kev", "").status == 400);
  CHECK(http_request(port, "POST", "/slots/0?action=list&model=kev", "").status == 400);
  CHECK(state_of(port, "kev") == "stopped");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("slot actions: a model without slot_cache gets llama-server's 501 saying how to enable it",
          "[http][e2e]") {
  TempDir dir("child-slots-off");
  Serve serve(routes_write_config(dir, standin_binary().string(), ""));
  auto r = http_request(serve.port(), "POST", "/slots/0?action=save&model=kev", R"({"filename":"a.bin"})");
  INFO(r.body);
  CHECK(r.status == 501);
  CHECK(r.json_body()["error"].value("type", "") == "not_supported_error");
  CHECK(r.body.find("slot_cache.enabled") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("cors proxy: forwarded to a profile with --ui-mcp-proxy, a 403 naming the flag otherwise",
          "[http][e2e]") {
  TempDir dir("child-cors-proxy");
  const auto cfg = routes_write_config(dir, standin_binary().string(), "");
  write_text(dir / "profiles/laya.yaml", read_text(dir / "profiles/laya.yaml") + "extra_args: [--ui-mcp-proxy]\n");
  Serve serve(cfg);
  const int port = serve.port();
  auto off = http_request(port, "GET", "/cors-proxy?model=kev&url=http%3A%2F%2Fexample.com%2Fmcp");
  INFO(off.body);
  CHECK(off.status == 403);  // llama-server's answer when its proxy is off
  CHECK(off.body.find("--ui-mcp-proxy") != std::string::npos);
  CHECK(state_of(port, "kev") == "stopped");
  auto on = http_request(port, "POST", "/cors-proxy?model=laya&url=http%3A%2F%2Fexample.com%2Fmcp", R"({"jsonrpc":"2.0"})",
                         {{"X-Llama-Server-Proxy-Header-Mcp-Protocol-Version", "2025-06-18"}});
  INFO(on.body);
  CHECK(on.status == 200);
  CHECK(on.header("x-kevlaya-model") == "laya");
  CHECK(on.header("mcp-session-id") == "standin-session");  // the target's own header reaches the client
  const auto j = on.json_body();
  CHECK(j.value("url", "") == "http://example.com/mcp");
  CHECK(j.value("method", "") == "POST");
  CHECK(j["headers"].value("mcp-protocol-version", "") == "2025-06-18");
  CHECK(j.value("body", "") == R"({"jsonrpc":"2.0"})");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("stream: a ready child's 400 before its first byte is the HTTP status, with its body",
          "[http][e2e]") {
  streamed_error_before_first_byte(standin_binary().string());
}

TEST_CASE("stream: a ready real llama-server's context-exceeded 400 is the HTTP status", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  streamed_error_before_first_byte(real);
}

TEST_CASE("stream: after loading comments, the child's 400 is an error event with its status and shape",
          "[http][e2e]") {
  TempDir dir("child-stream-400-loading");
  Serve serve(routes_write_config(dir, standin_binary().string(), "extra_args: [--fake-load-ms, '1500']\n",
                           "loading_messages: comments\n"));
  auto r = http_request(serve.port(), "POST", "/v1/chat/completions", routes_chat("kev", true, long_prompt()));
  INFO(r.body);
  CHECK(r.status == 200);  // committed by the `: loading` comments before the child answered
  CHECK(r.body.find(": loading kev") != std::string::npos);
  const auto err = stream_error(r.body);
  CHECK(err.value("code", 0) == 400);
  CHECK(err.value("type", "") == "exceed_context_size_error");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("metrics: a ready child's llamacpp metrics carry its model label, and a scrape starts nothing",
          "[http][e2e]") {
  ready_child_metrics(standin_binary().string());
}

TEST_CASE("metrics: the real llama-server's llamacpp metrics carry its model label", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  ready_child_metrics(real);
}
