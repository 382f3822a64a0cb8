// Switch benchmark: the orchestrator's own share of a model switch (time from the old child's exit
// to the new spawn, plus detection: "listening on" line -> ready seen), against the usual scripted
// pattern (SIGTERM, sleep 2, start the new server, poll /health once per second), in one run.
// Usage: kevlaya_bench_switch [N]   (uses $KEVLAYA_LLAMA_SERVER too when set)
#include <utility>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/process.hpp>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <filesystem>
#include <iostream>
#include <thread>

#include "supervisor/process_effects.hpp"
#include "supervisor/supervisor.hpp"
#include "upstream/client.hpp"

namespace asio = boost::asio;
namespace bp = boost::process;
namespace sv = kevlaya::supervisor;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto kScriptSleep = 2s;
constexpr auto kScriptPoll = 1s;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

kevlaya::config::Profile profile(const std::string& name, const std::string& bin, int port) {
  kevlaya::config::Profile p;
  p.name = name;
  p.binary = bin;
  p.model = std::filesystem::path(KEVLAYA_SHARED_MODELS) / "stories260K.gguf";
  p.ngl = 0;
  p.ctx = 256;
  p.port = port;
  if (bin == KEVLAYA_STANDIN_PATH) p.extra_args = {"--fake-load-ms", "0"};
  return p;
}

// Orchestrator: N alternating switches through Supervisor; share = total - drain - stop - spawn->listening.
std::vector<double> orchestrator_shares(const std::string& bin, int n, const std::string& tmp) {
  kevlaya::config::Config cfg;
  cfg.profiles = {profile("a", bin, sv::pick_free_port("127.0.0.1")), profile("b", bin, sv::pick_free_port("127.0.0.1"))};
  cfg.profiles[0].port.reset();
  cfg.profiles[1].port.reset();
  cfg.orch.scheduling.min_residency_ms = 0;
  cfg.orch.scheduling.max_wait_before_swap_ms = 0;
  cfg.orch.log_dir = tmp + "/logs";
  cfg.orch.state_dir = tmp + "/state";
  asio::io_context ioc;
  sv::Supervisor sup(ioc.get_executor(), cfg, std::make_unique<sv::ProcessEffects>(ioc, cfg.orch));
  std::vector<double> shares;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i <= n; ++i) {
      auto l = co_await sup.acquire(i % 2 ? "b" : "a", Clock::now() + 60s);
      if (!l) throw std::runtime_error(l.error().message);
    }
    auto snap = co_await sup.snapshot();
    for (const auto& r : snap.recent_switches)
      if (!r.from.empty()) shares.push_back(double(r.total_ms - r.drain_ms - r.stop_ms - r.spawn_to_listening_ms));
    co_await sup.shutdown();
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  ioc.run();
  return shares;
}

bool health_ok(int port) {
  asio::io_context ioc;
  bool ok = false;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    kevlaya::upstream::Request req;
    req.target = "/health";
    req.timeout = 1s;
    // Named, not a braced temporary: GCC 12 double-frees braced temporaries passed into co_await.
    kevlaya::upstream::Endpoint ep{"127.0.0.1", static_cast<std::uint16_t>(port)};
    auto r = co_await kevlaya::upstream::fetch(ioc.get_executor(), ep, req);
    ok = r.ok() && r->status == 200;
  }, asio::detached);
  ioc.run();
  return ok;
}

struct Scripted {
  std::unique_ptr<bp::child> proc;
  Clock::time_point listening{};
  std::thread reader;
};

void spawn_scripted(Scripted& s, const std::string& bin, int port) {
  auto p = profile("s", bin, port);
  auto argv = kevlaya::config::build_argv(p, "127.0.0.1", port);
  auto pipe = std::make_shared<bp::ipstream>();
  s.proc = std::make_unique<bp::child>(bp::exe = bin, bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                                       bp::std_out > bp::null, bp::std_err > *pipe);
  s.listening = {};
  s.reader = std::thread([&s, pipe] {  // timestamps the "listening on" line, drains the rest
    for (std::string line; std::getline(*pipe, line);)
      if (s.listening == Clock::time_point{} && line.find("listening on") != std::string::npos) s.listening = Clock::now();
  });
}

// Scripted pattern: share = (old exit -> new spawn) + (listening -> first successful 1 s poll).
std::vector<double> scripted_shares(const std::string& bin, int n) {
  std::vector<double> shares;
  Scripted cur;
  int port = sv::pick_free_port("127.0.0.1");
  spawn_scripted(cur, bin, port);
  while (!health_ok(port)) std::this_thread::sleep_for(kScriptPoll);
  for (int i = 0; i < n; ++i) {
    auto t_term = Clock::now();
    ::kill(cur.proc->id(), SIGTERM);
    cur.proc->wait();
    auto t_exit = Clock::now();
    cur.reader.join();
    std::this_thread::sleep_until(t_term + kScriptSleep);
    port = sv::pick_free_port("127.0.0.1");
    auto t_spawn = Clock::now();
    spawn_scripted(cur, bin, port);
    auto t_poll = t_spawn;
    do {
      t_poll += kScriptPoll;
      std::this_thread::sleep_until(t_poll);
    } while (!health_ok(port));
    auto t_ready = Clock::now();
    shares.push_back(ms(t_spawn - t_exit) + ms(t_ready - cur.listening));
  }
  ::kill(cur.proc->id(), SIGTERM);
  cur.proc->wait();
  cur.reader.join();
  return shares;
}

void run(const std::string& label, const std::string& bin, int n) {
  std::string tmp = (std::filesystem::temp_directory_path() / ("kevlaya-bench-" + std::to_string(::getpid()))).string();
  auto orch = median(orchestrator_shares(bin, n, tmp));
  auto script = median(scripted_shares(bin, std::max(3, n / 4)));
  std::filesystem::remove_all(tmp);
  std::printf("%-22s orchestrator share median %8.1f ms | scripted %8.1f ms | ratio %6.1fx\n", label.c_str(), orch,
              script, script / std::max(orch, 1.0));  // share floored at 1 ms
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20;
  run("stand-in (load 0 ms)", KEVLAYA_STANDIN_PATH, n);
  if (const char* real = std::getenv("KEVLAYA_LLAMA_SERVER"); real && *real) run("llama-server (real)", real, n);
  return 0;
}
