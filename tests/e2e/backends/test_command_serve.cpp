// backend: command end to end from the CLI: `serve` gates, switches, streams and restarts
// command servers like llama-server children; `args` prints what `serve` and `up` run; `logs`
// shows their output; a remote profile starts nothing.
#include <catch2/catch.hpp>
#include <signal.h>

#include <regex>

#include "support/backend_fixture.hpp"
#include "config/config.hpp"
#include "supervisor/process_effects.hpp"
#include "supervisor/state_file.hpp"
#include "support/process.hpp"
#include "support/supervisor_fixture.hpp"
#include "support/proc_probes.hpp"

using namespace kevlaya;
using namespace kevlaya::test;

namespace {

std::string orch() { return orch_binary().string(); }

// The words of a running process as `args` prints them.
std::string running_line(int pid) { return config::shell_join(supervisor::proc_cmdline(pid)) + "\n"; }

}  // namespace

TEST_CASE("command backend through serve: health gate, switch, SSE, /status, logs, and args = what runs",
          "[backends]") {
  TempDir dir("be-serve");
  write_text(dir / "profiles/kev.yaml", command_profile_yaml("kev"));
  write_text(dir / "profiles/laya.yaml", command_profile_yaml("laya"));
  write_door_config(dir);
  Serve serve(dir / "kevlaya.yaml");
  auto r = request(serve.port(), "/v1/chat/completions", chat("kev"));
  INFO(r.status << " " << r.body);
  CHECK(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "kev");
  CHECK(r.headers.count("x-kevlaya-backend") == 0);  // local, not remote
  const auto st = status_of(serve.port());
  const auto kev = profile_in(st, "kev");
  REQUIRE(kev);
  CHECK((*kev)["backend"] == "command");
  CHECK((*kev)["remote"].is_null());
  CHECK((*kev)["state"] == "ready");
  const int pid = (*kev)["pid"].get<int>();
  const std::string port = std::to_string((*kev)["port"].get<int>());
  auto args = run_command(orch() + " args kev --config " + (dir / "kevlaya.yaml").string() + " --port " + port);
  CHECK(args.output == running_line(pid));
  // A switch to laya, streamed: kev is stopped first (one at a time), laya is health-gated.
  auto s = request(serve.port(), "/v1/chat/completions", chat("laya", true));
  INFO(s.status << " " << s.body);
  CHECK(s.header("content-type").find("text/event-stream") != std::string::npos);
  CHECK(s.body.find("data: ") != std::string::npos);
  CHECK(s.body.find("[DONE]") != std::string::npos);
  const auto after = status_of(serve.port());
  CHECK(after["resident"] == nlohmann::json::array({"laya"}));
  CHECK_FALSE(alive(pid));  // stopped before laya started
  auto logs = run_command(orch() + " logs laya -n 50 --config " + (dir / "kevlaya.yaml").string());
  CHECK(logs.exit_code == 0);
  CHECK(logs.output.find("listening on") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("command backend through serve: a crashing server is restarted after its backoff", "[backends]") {
  TempDir dir("be-crash");
  write_text(dir / "profiles/crashy.yaml", command_profile_yaml("crashy", ", --fake-crash-after, '0'"));
  write_door_config(dir);
  Serve serve(dir / "kevlaya.yaml");
  for (int i = 1; i <= 2; ++i) {  // each start crashes on its first completion
    auto r = request(serve.port(), "/v1/chat/completions", chat("crashy"));
    INFO(r.status << " " << r.body);
    CHECK(r.status == 502);
    CHECK(r.body.find("child_crashed") != std::string::npos);
  }
  const auto p = profile_in(status_of(serve.port()), "crashy");
  REQUIRE(p);
  CHECK((*p)["crashes"] == 2);
  CHECK((*p)["total_restarts"] >= 1);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("up runs exactly what args prints (regression: args printed one line, up ran another)", "[backends]") {
  TempDir dir("be-up");
  const int port = supervisor::pick_free_port("127.0.0.1");
  const std::string name = "cmd-up-" + std::to_string(::getpid());
  write_text(dir / "profiles/c.yaml", command_profile_yaml(name) + "port: " + std::to_string(port) + "\n");
  write_door_config(dir);
  const auto cfg = (dir / "kevlaya.yaml").string();
  auto args = run_command(orch() + " args " + name + " --config " + cfg);
  REQUIRE(args.exit_code == 0);
  Proc up({orch(), "up", cfg, name}, dir / "up.log");
  REQUIRE_FALSE(up.wait_for(std::regex("switch - -> " + name)).empty());
  auto pids = pids_with_arg(name);
  pids.erase(std::remove(pids.begin(), pids.end(), up.pid()), pids.end());  // `up` names it too
  REQUIRE(pids.size() == 1);
  CHECK(args.output == running_line(pids.front()));
  CHECK(up.signal_and_wait(SIGTERM) == 130);  // up's exit status when a signal ends it
  CHECK_FALSE(alive(pids.front()));
}

TEST_CASE("a remote profile starts nothing under up (regression: up started /bin/sleep)", "[backends]") {
  TempDir dir("be-up-remote");
  const int port = supervisor::pick_free_port("127.0.0.1");  // nothing listens there
  write_text(dir / "profiles/r.yaml", remote_profile_yaml("r", "http://127.0.0.1:" + std::to_string(port)));
  write_door_config(dir);
  const auto cfg = (dir / "kevlaya.yaml").string();
  auto args = run_command(orch() + " args r --config " + cfg);
  CHECK(args.output == "# profile 'r' is remote (http://127.0.0.1:" + std::to_string(port) + "); nothing is started\n");
  Proc up({orch(), "up", cfg, "r"}, dir / "up.log");
  // Either answer is right for a remote that is down: "up" (before its first check failed) or
  // the error naming it; never a process.
  REQUIRE(eventually([&] { return up.log().find("up; Ctrl-C") != std::string::npos || !up.running(); },
                     std::chrono::seconds(20)));
  INFO(up.log());
  if (up.running()) {
    CHECK(children_of(up.pid()).empty());
    up.signal_and_wait(SIGTERM);
  } else {
    CHECK(up.log().find("r: remote http://127.0.0.1:" + std::to_string(port) + " is unreachable") != std::string::npos);
  }
  CHECK(up.log().find("switch") == std::string::npos);
}

TEST_CASE("the reference profiles under profiles/examples/ pass check", "[backends]") {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() / "profiles/examples")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    auto r = run_command(orch() + " check " + e.path().string());
    INFO(e.path().string() << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("ok: 0 error(s)") != std::string::npos);
  }
  CHECK(n >= 2);  // vLLM multi-LoRA and llama-server in Docker
}
