// Child / ProcessEffects / Supervisor against the stand-in server's fault flags (real processes).
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "ledger/children.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "supervisor/child.hpp"
#include "supervisor/process_effects.hpp"
#include "supervisor/state_file.hpp"
#include "support/supervisor_fixture.hpp"
#include "support/proc_probes.hpp"
#include "supervisor/supervisor.hpp"
#include "upstream/client.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::in;
using kevlaya::test::run_co;

namespace {

// A profile for the stand-in with a unique alias, so its processes can be found in /proc.
config::Profile standin(const std::string& name, std::vector<std::string> extra = {}) {
  auto p = test::fast_profile(name, test::standin_binary().string(), test::tiny_llama(), std::move(extra));
  p.alias = {name + "-" + std::to_string(::getpid())};
  return p;
}

std::string tag(const config::Profile& p) { return p.alias.front(); }

ChildOptions child_opts(const config::Profile& p, const test::TempDir& dir) {
  ChildOptions o;
  o.profile = p;
  o.port = pick_free_port("127.0.0.1");
  o.log_dir = dir / "logs";
  o.state_dir = dir / "state";
  return o;
}

StartOutcome start_child(asio::io_context& ioc, std::shared_ptr<Child>& c) {
  StartOutcome out;
  run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await c->start(); });
  return out;
}

}  // namespace

TEST_CASE("supervisor: stand-in starts, answers, stops on SIGTERM, state file lifecycle") {
  test::TempDir dir("sup-basic");
  asio::io_context ioc;
  auto p = standin("basic");
  auto c = Child::create(ioc, child_opts(p, dir));
  auto out = start_child(ioc, c);
  REQUIRE(out.ok());
  CHECK(out.report->endpoint.port > 0);
  CHECK(test::alive(c->pid()));
  CHECK(std::distance(std::filesystem::directory_iterator(dir / "state"), {}) == 1);
  StopReport rep;
  run_co(ioc, [&]() -> asio::awaitable<void> { rep = co_await c->stop(); });
  CHECK_FALSE(rep.killed);
  CHECK_FALSE(test::alive(c->pid()));
  CHECK(std::distance(std::filesystem::directory_iterator(dir / "state"), {}) == 0);
  CHECK(std::filesystem::file_size(child_log_path(dir / "logs", "basic")) > 0);
}

TEST_CASE("supervisor: a child that exits while loading fails the start with its exit code") {
  test::TempDir dir("sup-exit");
  asio::io_context ioc;
  auto c = Child::create(ioc, child_opts(standin("exit", {"--fake-exit-before-listen", "3"}), dir));
  auto out = start_child(ioc, c);
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::exited);
  CHECK(out.failure.exit_code == 3);
  CHECK_FALSE(out.failure.log_tail.empty());
}

TEST_CASE("supervisor: CUDA OOM at load is classified with a hint") {
  test::TempDir dir("sup-oom");
  asio::io_context ioc;
  auto c = Child::create(ioc, child_opts(standin("oom", {"--fake-cuda-oom"}), dir));
  auto out = start_child(ioc, c);
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::cuda_oom);
  CHECK(out.failure.hint.find("reduce ctx or ngl") != std::string::npos);
}

TEST_CASE("supervisor: /health hang hits startup_timeout, child killed and reaped") {
  test::TempDir dir("sup-hang");
  asio::io_context ioc;
  auto p = standin("hang", {"--fake-hang-health"});
  p.health.startup_timeout_s = 1;
  p.health.probe_timeout_ms = 200;
  auto c = Child::create(ioc, child_opts(p, dir));
  auto out = start_child(ioc, c);
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::startup_timeout);
  int status = 0;
  CHECK(::waitpid(c->pid(), &status, WNOHANG) == -1);  // already reaped: no zombie left
  CHECK(test::pids_with_arg(tag(p)).empty());
}

TEST_CASE("supervisor: SIGTERM ignored -> SIGKILL after grace") {
  test::TempDir dir("sup-ignore");
  asio::io_context ioc;
  auto p = standin("ignore", {"--fake-ignore-sigterm"});
  p.stop.grace_s = 0.3;
  auto c = Child::create(ioc, child_opts(p, dir));
  REQUIRE(start_child(ioc, c).ok());
  StopReport rep;
  run_co(ioc, [&]() -> asio::awaitable<void> { rep = co_await c->stop(); });
  CHECK(rep.killed);
  CHECK(rep.signal == SIGKILL);
  CHECK(rep.stop_ms >= 250);  // loose: grace was respected
  CHECK_FALSE(test::alive(c->pid()));
}

TEST_CASE("supervisor: port in use is classified, allocated ports are retried") {
  test::TempDir dir("sup-port");
  asio::io_context ioc;
  SECTION("a fixed port held by someone else") {
    asio::ip::tcp::acceptor holder(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    auto p = standin("port");
    p.port = holder.local_endpoint().port();
    auto c = Child::create(ioc, [&] { auto o = child_opts(p, dir); o.port = *p.port; return o; }());
    auto out = start_child(ioc, c);
    REQUIRE_FALSE(out.ok());
    CHECK(out.failure.kind == FailureKind::port_in_use);
  }
  SECTION("bind failures on allocated ports: three attempts, then port_in_use") {
    auto cfg = test::fast_config({standin("port", {"--fake-bind-fail"})}, dir.path());
    ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
    StartOutcome out;
    const auto child = ledger::lone_child(std::make_shared<const config::Profile>(cfg.profiles[0]));
    run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await fx.start(*child, nullptr); });
    REQUIRE_FALSE(out.ok());
    CHECK(out.failure.kind == FailureKind::port_in_use);
  }
}

TEST_CASE("supervisor: binary not found") {
  test::TempDir dir("sup-nobin");
  asio::io_context ioc;
  auto p = standin("nobin");
  p.binary = "/nonexistent/llama-server";
  auto c = Child::create(ioc, child_opts(p, dir));
  auto out = start_child(ioc, c);
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure.kind == FailureKind::binary_not_found);
}

namespace {
// A 4-token completion: the request the crash tests send to a child that dies on it.
upstream::Request tiny_completion() {
  upstream::Request req;
  req.method = "POST";
  req.target = "/completion";
  req.body = R"({"prompt":"hi","n_predict":4})";
  req.timeout = 5s;
  return req;
}
}  // namespace

// Regression (issue 15): a serving child's output is read in batches, off the request path (the
// default verbosity prints ~35 lines per request). The lines still reach the log file, and on an
// unexpected exit the reader drains the pipe at once: the failure carries the last lines although
// the batch reader had backed off to its longest wait (longer than the exit's drain wait).
TEST_CASE("supervisor: a serving child's lines reach its log in batches and its crash report at once") {
  test::TempDir dir("sup-batchlog");
  asio::io_context ioc;
  auto p = standin("batchlog");
  auto c = Child::create(ioc, child_opts(p, dir));
  std::optional<ChildFailure> failure;
  c->on_unexpected_exit([&](ChildFailure f) { failure = std::move(f); });
  auto out = start_child(ioc, c);
  REQUIRE(out.ok());
  const auto file = child_log_path(dir / "logs", "batchlog");
  const std::string line = "| processing task";  // the stand-in's line per task at verbosity 4
  auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) ++n;
    return n;
  };
  std::size_t before = 0;  // lines of the start
  std::size_t per = 0;     // lines of one request
  run_co(ioc, [&]() -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    co_await test::sleep_for(300ms);  // the start's last lines are in the file
    before = count(test::read_text(file));
    for (int i = 0; i < 2; ++i) {  // each request's lines arrive with the next batch
      REQUIRE((co_await upstream::fetch(ex, out.report->endpoint, tiny_completion())).ok());
      for (int t = 0; t < 300 && count(test::read_text(file)) == before + i * per; ++t) co_await test::sleep_for(10ms);
      co_await test::sleep_for(250ms);  // and all of them: the child printed them before it answered
      if (i == 0) per = count(test::read_text(file)) - before;
    }
    REQUIRE(per > 0);
    CHECK(count(test::read_text(file)) == before + 2 * per);
    co_await test::sleep_for(1600ms);  // nothing printed: the reader backs off to its longest wait
    REQUIRE((co_await upstream::fetch(ex, out.report->endpoint, tiny_completion())).ok());
    ::kill(c->pid(), SIGKILL);
    for (int i = 0; i < 300 && !failure; ++i) co_await test::sleep_for(10ms);
  });
  REQUIRE(failure);
  std::string tail;
  for (const auto& l : failure->log_tail) tail += l + "\n";
  CHECK(count(tail) == before + 3 * per);
  CHECK(count(test::read_text(file)) == before + 3 * per);
}

TEST_CASE("supervisor: crash mid-request fails the lease with child_crashed, next request restarts") {
  test::TempDir dir("sup-crash");
  asio::io_context ioc;
  auto cfg = test::fast_config({standin("crash", {"--fake-crash-after", "0"})}, dir.path());
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg)));
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await sup.acquire("crash", in(10s));
    REQUIRE(a.ok());
    const auto req = tiny_completion();
    auto r = co_await upstream::fetch(co_await asio::this_coro::executor, a->endpoint(), req);
    CHECK((!r.ok() || r->status >= 500));
    for (int i = 0; i < 200 && !a->crashed(); ++i) co_await test::sleep_for(10ms);  // exit is async
    REQUIRE(a->crashed());
    CHECK(a->crash_error().code == Errc::child_crashed);
    CHECK_FALSE(a->crash_error().detail.empty());
    a->release();
    auto b = co_await sup.acquire("crash", in(10s));
    CHECK(b.ok());
    auto snap = co_await sup.snapshot();
    CHECK(snap.profiles.front().crashes == 1);
    co_await sup.shutdown();
  });
}

// Regression (issue 14 item 5): the dead child stayed "ready" until its exit was reported (a fixed
// ~300 ms wait for its pipes); the caller whose request was reset now notices the crash at once.
TEST_CASE("supervisor: a reset from a child whose process is gone is a crash at once (check_alive)") {
  test::TempDir dir("sup-notice");
  asio::io_context ioc;
  auto cfg = test::fast_config({standin("crash", {"--fake-crash-after", "0"})}, dir.path());
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg)));
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto a = co_await sup.acquire("crash", in(10s));
    REQUIRE(a.ok());
    const auto req = tiny_completion();
    auto r = co_await upstream::fetch(co_await asio::this_coro::executor, a->endpoint(), req);
    REQUIRE_FALSE(r.ok());
    CHECK(co_await sup.check_alive(*a));
    CHECK(a->crash_error().code == Errc::child_crashed);
    auto snap = co_await sup.snapshot();
    CHECK(snap.profiles.front().state != Phase::ready);
    CHECK(snap.profiles.front().crashes == 1);
    a->release();
    auto b = co_await sup.acquire("crash", in(10s));  // waits for the restart
    CHECK(b.ok());
    co_await sup.shutdown();
  });
}

TEST_CASE("supervisor: crash loop at load -> profile failed with cooldown") {
  test::TempDir dir("sup-loop");
  asio::io_context ioc;
  auto p = standin("loop", {"--fake-exit-before-listen", "1"});
  p.restart.max_restarts = 2;
  auto cfg = test::fast_config({p}, dir.path());
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg)));
  run_co(ioc, [&]() -> asio::awaitable<void> {
    std::vector<Errc> codes;
    for (int i = 0; i < 4; ++i) {
      auto a = co_await sup.acquire("loop", in(10s));
      REQUIRE_FALSE(a.ok());
      codes.push_back(a.error().code);
    }
    CHECK(codes.back() == Errc::profile_failed);
    auto a = co_await sup.acquire("loop", in(10s));
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().retry_after_s > 0);
    co_await sup.shutdown();
  });
}

TEST_CASE("supervisor: a leftover child started through a loader wrapper is recognised and killed") {
  // tools/llama-server/fetch.sh's wrapper execs the server through its dynamic loader, so /proc
  // shows `ld.so BINARY ARGS` while the state file recorded `WRAPPER ARGS`.
  test::TempDir dir("sup-stale-wrapper");
  auto p = standin("stalew");
  const auto wrapper = dir / "llama-server";
  test::write_text(wrapper, "#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 " + test::standin_binary().string() +
                                " \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const std::vector<std::string> args = {"-m", test::tiny_llama().string(), "--port",
                                         std::to_string(pick_free_port("127.0.0.1")), "--alias", tag(p)};
  std::string cmd = "setsid " + wrapper.string();
  for (const auto& a : args) cmd += " " + a;
  auto r = test::run_command(cmd + " >/dev/null 2>&1 </dev/null & echo $!");
  int pid = std::stoi(r.output);
  auto execd = [&] {  // until the loader runs the stand-in
    auto a = proc_cmdline(pid);
    return a.size() > 1 && a[1] == test::standin_binary().string();
  };
  for (int i = 0; i < 300 && !execd(); ++i) usleep(10000);
  REQUIRE(execd());
  std::vector<std::string> recorded{wrapper.string()};
  recorded.insert(recorded.end(), args.begin(), args.end());
  REQUIRE(write_state(dir / "state", ChildRecord{pid, pid, proc_start_time(pid), "stalew", recorded}));
  asio::io_context ioc;
  config::Config cfg;
  cfg.orch.state_dir = dir / "state";
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  CHECK(fx.stale_killed() == 1);
  CHECK_FALSE(test::alive(pid));
}

TEST_CASE("supervisor: stale state file -> leftover child killed, unrelated pid spared") {
  test::TempDir dir("sup-stale");
  auto p = standin("stale");
  auto port = pick_free_port("127.0.0.1");
  std::string cmd = "setsid " + test::standin_binary().string() + " -m " + test::tiny_llama().string() +
                    " --port " + std::to_string(port) + " --alias " + tag(p) +
                    " >/dev/null 2>&1 </dev/null & echo $!";
  auto r = test::run_command(cmd);
  int pid = std::stoi(r.output);
  // Wait until setsid has exec'd the stand-in (before that, /proc shows setsid's own argv).
  auto execd = [&] {
    auto a = proc_cmdline(pid);
    return !a.empty() && a[0] == test::standin_binary().string();
  };
  for (int i = 0; i < 200 && !execd(); ++i) usleep(10000);
  ChildRecord rec{pid, pid, proc_start_time(pid), "stale", proc_cmdline(pid)};
  REQUIRE(write_state(dir / "state", rec));
  ChildRecord self{::getpid(), ::getpid(), proc_start_time(::getpid()), "self", {"not-this-argv"}};
  REQUIRE(write_state(dir / "state", self));
  asio::io_context ioc;
  config::Config cfg;
  cfg.orch.state_dir = dir / "state";
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  CHECK(fx.stale_killed() == 1);
  CHECK_FALSE(test::alive(pid));
  CHECK(std::filesystem::is_empty(dir / "state"));
}

namespace {

// `setsid sleep 60` in its own process group, waited for until exec'd (argv is then stable).
int spawn_sleeper() {
  const auto r = test::run_command("setsid sleep 60 >/dev/null 2>&1 </dev/null & echo $!");
  const int pid = std::stoi(r.output);
  for (int i = 0; i < 200 && proc_cmdline(pid) != std::vector<std::string>{"sleep", "60"}; ++i) usleep(10000);
  return pid;
}

}  // namespace

TEST_CASE("state dir: a child of a live orchestrator is spared, only its own dead records are reaped") {
  test::TempDir dir("sup-owner");
  const auto state = dir / "state";
  const int owner = spawn_sleeper();  // stands for another orchestrator, still running
  const int child = spawn_sleeper();
  ChildRecord rec{child, child, proc_start_time(child), "kev", proc_cmdline(child), owner, proc_start_time(owner)};
  REQUIRE(write_state(state, rec));
  // Files that are not child records: clean-up must leave them alone and must not throw.
  test::write_text(state / "ledger-measurements.json", "{\"kept\": true}");
  std::filesystem::create_directories(state / "x.json");
  std::filesystem::create_directories(state / "dir-7.json");
  test::write_text(state / "notes-1.json", "[1, 2]");
  {
    asio::io_context ioc;
    config::Config cfg;
    cfg.orch.state_dir = state;
    ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
    CHECK(fx.stale_killed() == 0);
    CHECK(test::alive(child));
    CHECK(std::filesystem::exists(state / ("kev-" + std::to_string(child) + ".json")));
  }
  ::kill(-owner, SIGKILL);  // the owner dies: its child is now a leftover
  for (int i = 0; i < 200 && test::alive(owner); ++i) usleep(10000);
  asio::io_context ioc;
  config::Config cfg;
  cfg.orch.state_dir = state;
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  CHECK(fx.stale_killed() == 1);
  CHECK_FALSE(test::alive(child));
  CHECK_FALSE(std::filesystem::exists(state / ("kev-" + std::to_string(child) + ".json")));
  CHECK(test::read_text(state / "ledger-measurements.json") == "{\"kept\": true}");
  CHECK(std::filesystem::is_directory(state / "x.json"));
  CHECK(std::filesystem::is_directory(state / "dir-7.json"));
  CHECK(std::filesystem::exists(state / "notes-1.json"));
}

TEST_CASE("child api key: the child refuses requests without the per-start key, the door's endpoint sends it") {
  test::TempDir dir("sup-key");
  asio::io_context ioc;
  config::Config cfg;
  cfg.orch.state_dir = dir / "state";
  cfg.orch.log_dir = dir / "logs";
  ProcessEffects fx(ioc, std::make_shared<const config::Config>(cfg));
  const auto p = standin("key");
  const auto child = ledger::lone_child(std::make_shared<const config::Profile>(p));
  const Effects::ExitCallback ignore = [](ChildFailure) {};
  StartOutcome out;
  run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await fx.start(*child, ignore); });
  REQUIRE(out.ok());
  const upstream::Endpoint with_key = out.report->endpoint;
  REQUIRE(with_key.api_key.size() >= 32);
  upstream::Endpoint bare = with_key;
  bare.api_key.clear();
  upstream::Request chat;
  chat.method = "POST";
  chat.target = "/v1/chat/completions";
  chat.body = R"({"max_tokens":2,"messages":[{"role":"user","content":"hi"}]})";
  upstream::Request health;
  health.target = "/health";
  Result<upstream::Response> direct = make_error(Errc::internal, ""), door = direct, probe = direct;
  run_co(ioc, [&]() -> asio::awaitable<void> {
    direct = co_await upstream::fetch(ioc.get_executor(), bare, chat);
    door = co_await upstream::fetch(ioc.get_executor(), with_key, chat);
    probe = co_await upstream::fetch(ioc.get_executor(), bare, health);
  });
  REQUIRE(direct.ok());
  CHECK(direct->status == 401);
  REQUIRE(door.ok());
  CHECK(door->status == 200);
  REQUIRE(probe.ok());
  CHECK(probe->status == 200);  // health checks need no key (public in llama-server too)
  // The key is in no file: not in the state record, not in the child's log.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (!e.is_regular_file()) continue;
    INFO(e.path());
    CHECK(test::read_text(e.path()).find(with_key.api_key) == std::string::npos);
  }
  // A second start draws a new key.
  run_co(ioc, [&]() -> asio::awaitable<void> { co_await fx.stop(p.name); });
  run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await fx.start(*child, ignore); });
  REQUIRE(out.ok());
  CHECK(out.report->endpoint.api_key != with_key.api_key);
  run_co(ioc, [&]() -> asio::awaitable<void> { co_await fx.stop(p.name); });
}
