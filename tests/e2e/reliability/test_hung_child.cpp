// Issue 32 item 2: `kill -STOP` of a ready child used to hold the request for 300 s (then 504),
// left the child `ready` with the same pid, and sent the next calls to it again. Now a child silent
// for health.hung_check_s is probed (GET /health, health.probe_timeout_ms); one that does not
// answer is `hung`: the request gets 502 child_crashed at once, the child is SIGKILLed (a stopped
// process dies too) and replaced, and the next call is answered by the new child.
#include <catch2/catch.hpp>

#include <signal.h>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "support/models.hpp"

using namespace kevlaya::test;
using nlohmann::json;

namespace {

// The documented bound (docs/reliability.md#liveness): hung_check_s + probe_timeout_ms + the kill;
// 1 s + 0.5 s here, with room for a loaded machine under ASan.
constexpr auto kBound = std::chrono::seconds(8);

std::filesystem::path write_hung_config(const TempDir& dir, const std::string& binary,
                                        const std::vector<std::string>& flags) {
  std::string args;
  for (const auto& f : flags) args += (args.empty() ? "\"" : ", \"") + f + "\"";
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + binary + "\nmodel: " + tiny_llama().string() +
                                            "\nngl: 0\nctx: 256\nparallel: 1\nextra_args: [" + args +
                                            "]\nhealth: {hung_check_s: 1, probe_timeout_ms: 500}\n"
                                            "stop: {grace_s: 0.5}\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nqueue: {max_depth: 8, max_wait_s: 120}\n");
  return dir / "kevlaya.yaml";
}

json profile_status(int port) {
  const auto st = json::parse(http_get(port, "/status").body, nullptr, false);
  REQUIRE(st.is_object());
  return st["profiles"][0];
}

HttpReply long_chat(int port) {
  const json body = {{"model", "kev"}, {"max_tokens", 60}, {"messages", {{{"role", "user"}, {"content", "Once"}}}}};
  return http_post(port, "/v1/chat/completions", body.dump(), 120s);
}

// `during`: SIGSTOP while a slow answer is in flight; otherwise SIGSTOP the idle child, then call.
void stopped_child_is_replaced(const std::string& binary, const std::vector<std::string>& flags, bool during) {
  TempDir dir("hung-child");
  Serve serve(write_hung_config(dir, binary, flags));
  REQUIRE(chat(serve.port(), "kev", false, 120s).status == 200);
  const int pid = profile_status(serve.port())["pid"].get<int>();
  REQUIRE(pid > 0);
  HttpReply r;
  auto t0 = std::chrono::steady_clock::now();
  if (during) {
    auto call = std::async(std::launch::async, [&] { return long_chat(serve.port()); });
    while (profile_status(serve.port())["in_flight"].get<int>() == 0) std::this_thread::sleep_for(5ms);
    t0 = std::chrono::steady_clock::now();
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    r = call.get();
  } else {
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    r = chat(serve.port(), "kev", false, 120s);
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  INFO("status " << r.status << " body " << r.body << "\n" << serve.proc().log());
  CHECK(took < kBound);
  CHECK(r.status == 502);
  REQUIRE(is_openai_error(r.body));
  const auto err = json::parse(r.body)["error"];
  CHECK(err["code"] == "child_crashed");
  CHECK(err["message"].get<std::string>().find("stopped answering") != std::string::npos);
  // The next call is answered by a new child; the stopped one was killed.
  const auto next = chat(serve.port(), "kev", false, 120s);
  CHECK(next.status == 200);
  const auto st = profile_status(serve.port());
  CHECK(st["pid"].get<int>() != pid);
  REQUIRE(st.contains("last_failure"));
  CHECK(st["last_failure"]["kind"] == "hung");
  CHECK(::kill(pid, 0) != 0);  // gone (killed and reaped)
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("hung child: a stand-in stopped during a request ends it with child_crashed within the bound and is replaced",
          "[reliability]") {
  stopped_child_is_replaced(standin_binary().string(), {"--fake-token-ms", "100"}, true);
}

TEST_CASE("hung child: a stopped stand-in is noticed by the next request and replaced", "[reliability]") {
  stopped_child_is_replaced(standin_binary().string(), {}, false);
}

TEST_CASE("hung child: a real llama-server stopped while ready is noticed, killed and replaced", "[reliability]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  stopped_child_is_replaced(server, {}, false);
}

namespace {

// A pipeline stage's call on a child SIGSTOPped during the call (`during`) or before it: the stopped
// child is found hung within the profile's bound, killed and replaced.
void stage_on_stopped_child(const std::string& binary, const std::vector<std::string>& flags, bool during) {
  TempDir dir("hung-pipeline");
  const auto cfg = write_hung_config(dir, binary, flags);
  write_text(dir / "pipelines/one.yaml", "name: one\nstages:\n  - name: decide\n    model: kev\n"
                                         "    user: \"{{input}}\"\n    sampling:\n      max_tokens: 60\n");
  Serve serve(cfg);
  REQUIRE(chat(serve.port(), "kev", false, 120s).status == 200);
  const int pid = profile_status(serve.port())["pid"].get<int>();
  REQUIRE(pid > 0);
  if (!during) REQUIRE(::kill(pid, SIGSTOP) == 0);
  auto t0 = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] {
    return http_post(serve.port(), "/v1/pipelines/one/runs", R"({"input":"disk full"})", 120s);
  });
  if (during) {
    while (profile_status(serve.port())["in_flight"].get<int>() == 0) std::this_thread::sleep_for(5ms);
    t0 = std::chrono::steady_clock::now();
    REQUIRE(::kill(pid, SIGSTOP) == 0);
  }
  const auto hung = [&] {
    const auto st = profile_status(serve.port());
    return st.contains("last_failure") && st["last_failure"].is_object() && st["last_failure"]["kind"] == "hung";
  };
  REQUIRE(eventually(hung, 60s));
  const auto took = std::chrono::steady_clock::now() - t0;
  const auto r = run.get();
  INFO("run " << r.status << " " << r.body << "\n" << serve.proc().log());
  CHECK(took < kBound);
  CHECK(::kill(pid, 0) != 0);  // killed and reaped
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

// A pipeline stage's call is bounded as a door call is (Supervisor::call_options): the profile's
// hung_check_s, not the default 10 s (before: a stage waited 10 s on a stopped child).
TEST_CASE("hung child: a pipeline stage's call honours the profile's hung_check_s", "[reliability]") {
  stage_on_stopped_child(standin_binary().string(), {"--fake-token-ms", "100"}, true);
}

TEST_CASE("hung child: a pipeline stage on a stopped real llama-server is noticed within hung_check_s",
          "[reliability]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  stage_on_stopped_child(server, {}, false);
}
