// The door as a drop-in for llama-server (issue 46), end to end: `kevlaya-orch serve` with the
// stand-in child. A one-profile door takes any `model` name as llama-server does, on every API;
// default_model does the same with several profiles; /health is llama-server's 503 "Loading
// model" until the preloaded child is up (/livez stays 200); a 100-call alternating burst with
// the default queue bound is answered in full.
#include <catch2/catch.hpp>

#include <signal.h>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// kevlaya.yaml + one profile per name, all on the stand-in and the tiny model; `profile_extra`
// is appended to each profile, `top_extra` to kevlaya.yaml.
void dropin_write_config(const TempDir& dir, std::vector<std::string> names, const std::string& profile_extra,
                  const std::string& top_extra = "") {
  for (const auto& n : names)
    write_text(dir / "profiles" / (n + ".yaml"), "name: " + n + "\nbinary: " + standin_binary().string() +
                                                    "\nmodel: " + tiny_llama().string() +
                                                    "\nngl: 0\nctx: 256\nparallel: 1\nshared_base: false\n" +
                                                    profile_extra);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\n" + top_extra);
}

std::string chat_as(const std::string& model_json) {
  return R"({)" + model_json + R"("max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
}

}  // namespace

TEST_CASE("drop-in: one profile answers a missing, null or unknown model on every API, as llama-server does",
          "[http][e2e]") {
  TempDir dir("dropin-one");
  dropin_write_config(dir, {"kev"}, "");
  Serve serve(dir / "kevlaya.yaml");
  const auto port = static_cast<std::uint16_t>(serve.port());
  for (const std::string model : {"", R"("model":null,)", R"("model":"gpt-3.5-turbo",)", R"("model":"test",)"}) {
    INFO(model);
    auto chat = http_request(port, "POST", "/v1/chat/completions", chat_as(model));
    INFO(chat.body);
    CHECK(chat.status == 200);
    CHECK(chat.header("x-kevlaya-model") == "kev");
    auto anth = http_request(port, "POST", "/v1/messages", chat_as(model));
    INFO(anth.body);
    CHECK(anth.status == 200);
    auto ollama = http_request(port, "POST", "/api/chat",
                               "{" + model + R"("stream":false,"messages":[{"role":"user","content":"Once"}]})");
    INFO(ollama.body);
    CHECK(ollama.status == 200);
  }
  auto completion = http_request(port, "POST", "/completion", R"({"model":"codellama70b","prompt":"Once","n_predict":4})");
  CHECK(completion.status == 200);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: default_model takes missing and unknown names with several profiles", "[http][e2e]") {
  TempDir dir("dropin-default");
  dropin_write_config(dir, {"kev", "laya"}, "", "default_model: laya\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto port = static_cast<std::uint16_t>(serve.port());
  auto unknown = http_request(port, "POST", "/v1/chat/completions", chat_as(R"("model":"gpt-4o",)"));
  INFO(unknown.body);
  CHECK(unknown.status == 200);
  CHECK(unknown.header("x-kevlaya-model") == "laya");
  auto missing = http_request(port, "POST", "/v1/chat/completions", chat_as(""));
  CHECK(missing.header("x-kevlaya-model") == "laya");
  auto named = http_request(port, "POST", "/v1/chat/completions", chat_as(R"("model":"kev",)"));
  CHECK(named.header("x-kevlaya-model") == "kev");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: with preload, /health is llama-server's 503 Loading model until the child is up, while /livez is 200",
          "[http][e2e]") {
  TempDir dir("dropin-health");
  dropin_write_config(dir, {"kev"}, "extra_args: [--fake-load-ms, '2000']\n", "preload: [kev]\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto port = static_cast<std::uint16_t>(serve.port());
  auto loading = http_request(port, "GET", "/health");
  CHECK(loading.status == 503);
  CHECK(loading.json_body() ==
        json::parse(R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})"));
  CHECK(http_request(port, "GET", "/livez").status == 200);
  CHECK(eventually([&] { return http_request(port, "GET", "/health").status == 200; }, 30s));
  CHECK(http_request(port, "GET", "/health").json_body()["status"] == "ok");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: without preload /health is 200 at once", "[http][e2e]") {
  TempDir dir("dropin-health-nopre");
  dropin_write_config(dir, {"kev"}, "extra_args: [--fake-load-ms, '2000']\n");
  Serve serve(dir / "kevlaya.yaml");
  CHECK(http_request(static_cast<std::uint16_t>(serve.port()), "GET", "/health").status == 200);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: a 100-call alternating burst with the default queue bound is answered in full", "[http][e2e]") {
  TempDir dir("dropin-burst");
  dropin_write_config(dir, {"kev", "laya"}, "extra_args: [--fake-load-ms, '20', --fake-token-ms, '0']\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto port = std::to_string(serve.port());
  const std::string script =
      "for i in $(seq 1 100); do m=kev; [ $((i % 2)) = 0 ] && m=laya; "
      "curl -sS -o /dev/null -w '%{http_code}\\n' --max-time 120 -H 'Content-Type: application/json' "
      "-d \"{\\\"model\\\":\\\"$m\\\",\\\"max_tokens\\\":4,\\\"messages\\\":[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"Once\\\"}]}\" "
      "http://127.0.0.1:" + port + "/v1/chat/completions & done; wait";
  auto r = run_command(script);
  INFO(r.output);
  CHECK(count_of(r.output, "200\n") == 100U);
  CHECK(count_of(r.output, "429\n") == 0U);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

namespace {

// The pid of `model`'s child as /status shows it (0: none).
int child_pid_of(int port, const std::string& model) {
  const auto status = http_request(port, "GET", "/status").json_body();
  for (const auto& p : status.value("profiles", json::array()))
    if (p.value("name", "") == model) return p.value("pid", 0);
  return 0;
}

int free_port() {  // a port nobody listens on now (bound to 0, read back, closed)
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

}  // namespace

TEST_CASE("drop-in: in Vertex AI mode the door listens on AIP_HTTP_PORT and its routes reach the real child's /predict",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("vertex");
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + real + "\nmodel: " + tiny_llama().string() +
                                            "\nngl: 0\nctx: 256\nparallel: 2\n");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\n");
  const int aip_port = free_port();
  Serve serve(dir / "kevlaya.yaml", {{"AIP_MODE", "PREDICTION"}, {"AIP_HTTP_PORT", std::to_string(aip_port)},
                                     {"AIP_PREDICT_ROUTE", "/v1/endpoints/kev:predict"}, {"AIP_HEALTH_ROUTE", "/ping"}});
  const int port = serve.port();
  CHECK(port == aip_port);
  CHECK(http_request(port, "GET", "/ping").status == 200);
  const json instance = {{"@requestFormat", "chatCompletions"}, {"max_tokens", 4},
                         {"messages", json::array({json{{"role", "user"}, {"content", "Once"}}})}};
  const auto r = http_request(port, "POST", "/v1/endpoints/kev:predict",
                              json{{"instances", json::array({instance, instance})}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 200);
  const auto predictions = r.json_body().value("predictions", json::array());
  REQUIRE(predictions.size() == 2);
  for (const auto& p : predictions) CHECK(p["choices"][0]["message"]["role"] == "assistant");
  // The child serves Vertex AI's routes on its own port, never the door's.
  const int child_pid = child_pid_of(port, "kev");
  REQUIRE(child_pid > 0);
  const auto env = environ_of(child_pid);
  CHECK(env.count("AIP_HTTP_PORT") == 1);
  CHECK(env.at("AIP_HTTP_PORT") != std::to_string(port));
  CHECK(env.at("AIP_PREDICT_ROUTE") == "/predict");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: the door's AIP_* and LLAMA_ARG_* variables never reach a child outside Vertex AI mode",
          "[http][e2e]") {
  TempDir dir("vertex-off");
  dropin_write_config(dir, {"kev"}, "");
  Serve serve(dir / "kevlaya.yaml", {{"AIP_HTTP_PORT", "1"}, {"AIP_PREDICT_ROUTE", "/x"}, {"LLAMA_ARG_PORT", "1"}});
  const int port = serve.port();
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", chat_as(R"("model":"kev",)")).status == 200);
  const int child_pid = child_pid_of(port, "kev");
  REQUIRE(child_pid > 0);
  const auto env = environ_of(child_pid);
  REQUIRE_FALSE(env.empty());
  CHECK(env.count("AIP_HTTP_PORT") == 0);
  CHECK(env.count("AIP_PREDICT_ROUTE") == 0);
  CHECK(env.count("LLAMA_ARG_PORT") == 0);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("drop-in: serve --child-output writes each child's lines to the door's stderr as [NAME] line, only then",
          "[http][e2e]") {
  for (const bool echo : {true, false}) {
    INFO("--child-output " << echo);
    TempDir dir(echo ? "child-output" : "child-output-off");
    dropin_write_config(dir, {"kev"}, "");
    Serve serve(dir / "kevlaya.yaml", {}, echo ? std::vector<std::string>{"--child-output"} : std::vector<std::string>{});
    const int port = serve.port();
    REQUIRE(http_request(port, "POST", "/v1/chat/completions", chat_as(R"("model":"kev",)")).status == 200);
    CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
    const auto door_log = serve.proc().log();
    const auto child_log = read_text(dir / "logs/kev.log");
    REQUIRE(child_log.find("listening on") != std::string::npos);  // the stand-in's own line
    CHECK((door_log.find("[kev] ") != std::string::npos) == echo);
    CHECK((door_log.find("listening on http://127.0.0.1:") != std::string::npos));  // the door's own, always
    if (echo) CHECK(door_log.find("[kev] ") < door_log.size());
  }
}
