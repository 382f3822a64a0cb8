// End to end: `kevlaya-orch serve` with the real ProcessEffects and the stand-in (or the real
// llama-server from $KEVLAYA_LLAMA_SERVER) as the child, driven by curl; SIGTERM exits 0.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "door_fixture.hpp"
#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

void serve_write_config(const TempDir& dir, const std::string& server_binary, const std::string& extra = "") {
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + server_binary + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 0\nctx: 256\nparallel: 2\n");
  write_text(dir / "profiles/laya.yaml", "name: laya\nbinary: " + server_binary + "\nmodel: " +
                                             tiny_llama().string() + "\nngl: 0\nctx: 256\nparallel: 1\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n" + extra);
}

void serve_exercise(const std::string& server_binary) {
  TempDir dir("http-e2e");
  serve_write_config(dir, server_binary);
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
  serve_write_config(dir, server_binary, "residency: rotate\n");
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
  serve_exercise(standin_binary().string());
}

TEST_CASE("serve end to end with the real llama-server", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  serve_exercise(real);
}

// A streaming client that hangs up must stop the real child's generation, not only the door's
// relay: llama-server cancels a task when its HTTP connection closes ("cancel task" in its log),
// so the door has to close the upstream connection at once. The model's 32768-token context lets
// an uncancelled generation run for seconds (and end without a cancel line); with one slot, the
// next request is served only once that slot is free.
TEST_CASE("a client that hangs up mid-stream cancels the real llama-server's generation",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("http-hangup");
  auto spec = kevlaya::gguf::stories_shaped_spec();
  spec.n_ctx_train = 32768;
  REQUIRE(kevlaya::gguf::write_tiny_model(dir / "long.gguf", spec).ok());
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + real + "\nmodel: " + (dir / "long.gguf").string() +
                                            "\nngl: 0\nctx: 32768\nparallel: 1\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n");
  Serve serve(dir / "kevlaya.yaml");
  {
    RawClient c(static_cast<std::uint16_t>(serve.port()));
    const std::string body =
        R"({"model":"kev","stream":true,"max_tokens":100000,"ignore_eos":true,"messages":[{"role":"user","content":"Once"}]})";
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    REQUIRE(c.read_until("data: ", 60s).find("data: ") != std::string::npos);
    c.close();
  }
  const auto log = dir / "logs/kev.log";
  const bool cancelled =
      eventually([&] { return read_text(log).find("cancel task") != std::string::npos; }, 30s);
  const auto text = read_text(log);
  INFO(text.substr(text.size() > 3000 ? text.size() - 3000 : 0));
  CHECK(cancelled);
  const auto next = http_request(static_cast<std::uint16_t>(serve.port()), "POST", "/v1/chat/completions",
                                 R"({"model":"kev","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})");
  CHECK(next.status == 200);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("serve refuses a port already in use with a clear error", "[http][e2e]") {
  TempDir dir("http-port");
  serve_write_config(dir, standin_binary().string());
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
