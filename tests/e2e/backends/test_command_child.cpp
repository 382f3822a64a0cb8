// backend: command, process level: the stand-in (a test double of llama-server) started through
// an argv template runs exactly build_argv's words, is health-gated like a llama-server profile,
// and is stopped by its stop command (bounded by its timeout), its signal, or SIGKILL, with
// nothing of its process group left behind.
#include <catch2/catch.hpp>
#include <unistd.h>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "supervisor/child.hpp"
#include "supervisor/process_effects.hpp"
#include "supervisor/state_file.hpp"
#include "support/supervisor_fixture.hpp"
#include "support/proc_probes.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using kevlaya::test::run_co;

namespace {

// The stand-in behind an argv template; its name is unique so its processes can be found.
config::Profile standin_command(const std::string& tag, std::vector<std::string> extra = {}) {
  auto p = test::fast_profile(tag + "-" + std::to_string(::getpid()), "llama-server-not-used", test::tiny_llama());
  p.backend = config::Backend::command;
  p.command = {test::standin_binary().string(), "-m", "{model}", "--host", "{host}", "--port", "{port}",
               "-c", "{ctx}", "-np", "{parallel}", "--alias", "{name}"};
  p.command.insert(p.command.end(), extra.begin(), extra.end());
  return p;
}

ChildOptions opts(const config::Profile& p, const test::TempDir& dir) {
  ChildOptions o;
  o.profile = p;
  o.port = pick_free_port("127.0.0.1");
  o.log_dir = dir / "logs";
  o.state_dir = dir / "state";
  return o;
}

StartOutcome start(asio::io_context& ioc, const std::shared_ptr<Child>& c) {
  StartOutcome out;
  run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await c->start(); });
  return out;
}

StopReport stop(asio::io_context& ioc, const std::shared_ptr<Child>& c) {
  StopReport rep;
  run_co(ioc, [&]() -> asio::awaitable<void> { rep = co_await c->stop(); });
  return rep;
}

}  // namespace

TEST_CASE("command backend runs exactly the argv `args` prints (regression: binary ran instead of command[0])",
          "[backends]") {
  test::TempDir dir("be-argv");
  asio::io_context ioc;
  const auto p = standin_command("argv");
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  const auto printed = config::build_argv(p, "127.0.0.1", c->options().port);  // what `args` prints
  CHECK(proc_cmdline(c->pid()) == printed);
  CHECK_FALSE(stop(ioc, c).killed);
  CHECK_FALSE(test::alive(c->pid()));
}

TEST_CASE("command backend: a missing program is binary_not_found naming command[0]", "[backends]") {
  test::TempDir dir("be-missing");
  asio::io_context ioc;
  auto p = standin_command("missing");
  p.command.front() = (dir / "no-such-server").string();
  auto out = start(ioc, Child::create(ioc, opts(p, dir)));
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::binary_not_found);
  CHECK(out.failure.message == "command not found or not executable: " + (dir / "no-such-server").string());
}

TEST_CASE("command backend: health.ready_line gates readiness on a log line, without an HTTP probe", "[backends]") {
  test::TempDir dir("be-ready");
  asio::io_context ioc;
  auto p = standin_command("ready");
  p.health.path = "/no-such-route";  // a probe would never pass
  p.health.ready_line = "listening on";
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  stop(ioc, c);
}

TEST_CASE("command backend: health.status is the status that means ready", "[backends]") {
  test::TempDir dir("be-status");
  asio::io_context ioc;
  auto p = standin_command("status");
  p.health.status = 204;  // the stand-in answers 200: never ready
  p.health.startup_timeout_s = 1;
  auto out = start(ioc, Child::create(ioc, opts(p, dir)));
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::startup_timeout);
}

TEST_CASE("command backend: a server ignoring SIGTERM is SIGKILLed with its whole group (no orphan)", "[backends]") {
  test::TempDir dir("be-kill");
  asio::io_context ioc;
  auto p = standin_command("kill", {"--fake-ignore-sigterm"});
  const std::string marker = "3117" + std::to_string(::getpid() % 1000);
  // A shell that leaves a grandchild behind, then becomes the server: both are in the group.
  p.command = {"/bin/sh", "-c", "/bin/sleep " + marker + " & exec " + config::shell_join(p.command)};
  p.stop.grace_s = 0.3;
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  REQUIRE(test::pids_with_arg(marker).size() == 1);
  CHECK(stop(ioc, c).killed);
  CHECK_FALSE(test::alive(c->pid()));
  CHECK(test::eventually([&] { return test::pids_with_arg(marker).empty(); }, std::chrono::seconds(5)));
}

TEST_CASE("command backend: stop.signal is the first signal sent", "[backends]") {
  test::TempDir dir("be-sig");
  asio::io_context ioc;
  auto p = standin_command("sig", {"--fake-ignore-sigterm"});
  p.stop.signal = "INT";  // the stand-in drains and exits on SIGINT, ignoring only SIGTERM
  p.stop.grace_s = 10;
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  const auto rep = stop(ioc, c);
  CHECK_FALSE(rep.killed);
  CHECK(rep.exit_code == 0);
}

TEST_CASE("command backend: the stop command runs first, with {pid} filled", "[backends]") {
  test::TempDir dir("be-stopcmd");
  asio::io_context ioc;
  auto p = standin_command("stopcmd", {"--fake-ignore-sigterm"});
  const auto mark = dir / "stopped-by";
  p.stop.command = {"/bin/sh", "-c", "echo {name} > " + mark.string() + " && kill -KILL {pid}"};
  p.stop.grace_s = 10;  // SIGTERM is ignored: only the stop command can end it before SIGKILL
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  const auto rep = stop(ioc, c);
  CHECK(rep.stop_command == "exit 0");
  CHECK_FALSE(rep.killed);
  CHECK(rep.signal == SIGKILL);  // the stop command's kill, not ours
  CHECK(test::read_text(mark) == p.name + "\n");
}

TEST_CASE("command backend: a stop command past stop.timeout_s is killed, then the signal stops the server",
          "[backends]") {
  test::TempDir dir("be-stoptimeout");
  asio::io_context ioc;
  auto p = standin_command("stoptimeout");
  const std::string marker = "4242" + std::to_string(::getpid() % 1000);
  p.stop.command = {"/bin/sleep", marker};
  p.stop.command_timeout_s = 0.3;
  auto c = Child::create(ioc, opts(p, dir));
  REQUIRE(start(ioc, c).ok());
  const auto rep = stop(ioc, c);
  CHECK(rep.stop_command == "timed out (killed)");
  CHECK_FALSE(rep.killed);  // SIGTERM was enough once the stop command gave up
  CHECK_FALSE(test::alive(c->pid()));
  CHECK(test::pids_with_arg(marker).empty());
}
