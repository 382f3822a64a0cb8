// End to end: `kevlaya-orch serve` with the real ProcessEffects and the stand-in (or the real
// llama-server from $KEVLAYA_LLAMA_SERVER) as the child, driven by curl; SIGTERM exits 0.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

void write_config(const TempDir& dir, const std::string& server_binary, const std::string& extra = "") {
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + server_binary + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 0\nctx: 256\nparallel: 2\n");
  write_text(dir / "profiles/laya.yaml", "name: laya\nbinary: " + server_binary + "\nmodel: " +
                                             tiny_llama().string() + "\nngl: 0\nctx: 256\nparallel: 1\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n" + extra);
}

void exercise(const std::string& server_binary) {
  TempDir dir("http-e2e");
  write_config(dir, server_binary);
  Serve serve(dir / "kevlaya.yaml");
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port());
  const std::string chat = R"({"model":"kev","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  auto r = run_command("curl -sS -i --max-time 120 -H 'Content-Type: application/json' -d '" + chat +
                       "' " + base + "/v1/chat/completions");
  INFO(r.output);
  CHECK(r.output.find("HTTP/1.1 200") != std::string::npos);
  CHECK(r.output.find("X-Kevlaya-Model: kev") != std::string::npos);
  CHECK(r.output.find("\"choices\"") != std::string::npos);
  // A swap to laya, streamed.
  const std::string schat = R"({"model":"laya","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  auto s = run_command("curl -sS -N --max-time 120 -H 'Content-Type: application/json' -d '" + schat +
                       "' " + base + "/v1/chat/completions");
  INFO(s.output);
  CHECK(s.output.find("data: ") != std::string::npos);
  CHECK(s.output.find("[DONE]") != std::string::npos);
  auto m = run_command("curl -sS --max-time 30 " + base + "/v1/models");
  CHECK(m.output.find("\"ready\"") != std::string::npos);
  // The child's own timings (read from the answer and from the stream's tail) reach /metrics.
  auto metrics = run_command("curl -sS --max-time 30 " + base + "/metrics");
  INFO(metrics.output);
  CHECK(metrics.output.find("kevlaya_generation_tokens_per_second_count{model=\"kev\"} 1") != std::string::npos);
  CHECK(metrics.output.find("kevlaya_generation_tokens_per_second_count{model=\"laya\"} 1") != std::string::npos);
  CHECK(metrics.output.find("kevlaya_prompt_tokens_per_second_count{model=\"kev\"} 1") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// A burst of concurrent requests alternating between two models that must rotate (one child at a
// time): every one is answered 200, none lost to a connection error while a child starts.
void alternating_burst(const std::string& server_binary, int n) {
  TempDir dir("http-burst");
  write_config(dir, server_binary, "residency: rotate\n");
  for (const char* name : {"kev", "laya"}) {  // same model file: opt out of the shared base
    auto f = dir / "profiles" / (std::string(name) + ".yaml");
    write_text(f, read_text(f) + "shared_base: false\n");
  }
  Serve serve(dir / "kevlaya.yaml");
  const auto port = std::to_string(serve.port());
  std::string script = "for i in $(seq 1 " + std::to_string(n) + "); do m=kev; [ $((i % 2)) = 0 ] && m=laya; "
                       "curl -sS -o /dev/null -w '%{http_code}\\n' --max-time 120 -H 'Content-Type: application/json' "
                       "-d \"{\\\"model\\\":\\\"$m\\\",\\\"max_tokens\\\":4,\\\"messages\\\":[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"Once\\\"}]}\" "
                       "http://127.0.0.1:" + port + "/v1/chat/completions & done; wait";
  auto r = run_command(script);
  INFO(r.output);
  INFO(serve.proc().log());
  CHECK(count_of(r.output, "200\n") == static_cast<std::size_t>(n));
  auto st = run_command("curl -sS --max-time 30 http://127.0.0.1:" + port + "/status");
  INFO(st.output);
  // It really rotated (grouping serves each model's waiting requests together, so one or more
  // switches, each between the two children).
  CHECK((st.output.find("\"from\":\"kev\",") != std::string::npos ||
         st.output.find("\"from\":\"laya\",") != std::string::npos));
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("serve answers every request of an alternating burst (no request lost while a child starts)",
          "[http][e2e]") {
  alternating_burst(standin_binary().string(), 24);
}

TEST_CASE("serve answers an alternating burst on the real llama-server", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  alternating_burst(real, 12);
}

TEST_CASE("serve end to end with the stand-in child, SIGTERM exits 0", "[http][e2e]") {
  exercise(standin_binary().string());
}

TEST_CASE("serve end to end with the real llama-server", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  exercise(real);
}

TEST_CASE("serve refuses a port already in use with a clear error", "[http][e2e]") {
  TempDir dir("http-port");
  write_config(dir, standin_binary().string());
  Serve first(dir / "kevlaya.yaml");
  const auto port = std::to_string(first.port());
  // Its own state_dir: the same one is refused earlier, by the lock (see the state_dir tests).
  write_text(dir / "other.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state2\nlog_dir: logs2\n");
  auto second = run_command(orch_binary().string() + " serve " + (dir / "other.yaml").string() +
                            " --port " + port);
  CHECK(second.exit_code == 1);
  CHECK(second.output.find("cannot listen on 127.0.0.1:" + port) != std::string::npos);
  CHECK(first.proc().signal_and_wait(SIGTERM) == 0);
}
