// Switch benchmark: the orchestrator's own share of a model switch (time from the old child's exit
// to the new spawn, plus detection: "listening on" line -> ready seen), against the usual scripted
// pattern (SIGTERM, sleep 2, start the new server, poll /health once per second), in one run.
// With the real binary ($KEVLAYA_LLAMA_SERVER) it also measures, side by side, the time per
// alternating call including the child's load: orchestrator (acquire + request) against llama.cpp's
// own router mode (`--models-dir DIR --models-max 1`, the same binary, two copies of stories260K).
// Usage: kevlaya_bench_switch [N]
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
#include "../stats.hpp"

namespace asio = boost::asio;
namespace bp = boost::process;
namespace sv = kevlaya::supervisor;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto kScriptSleep = 2s;
constexpr auto kScriptPoll = 1s;

using kevlaya::bench::median;
using kevlaya::bench::ms;

kevlaya::config::Profile profile(const std::string& name, const std::string& bin, int port) {
  kevlaya::config::Profile p;
  p.name = name;
  p.binary = bin;
  p.model = std::filesystem::path(KEVLAYA_BENCH_MODELS) / "stories260K.gguf";
  p.ngl = 0;
  p.ctx = 256;
  p.port = port;
  if (bin == KEVLAYA_STANDIN_PATH) p.extra_args = {"--fake-load-ms", "0"};
  return p;
}

constexpr const char* kChatBody =
    R"({"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":4})";

// One chat call (max_tokens 4) to `ep`, optionally naming `model` (router mode routes on it).
asio::awaitable<void> chat(asio::any_io_executor ex, kevlaya::upstream::Endpoint ep, std::string model) {
  kevlaya::upstream::Request req;
  req.method = "POST";
  req.target = "/v1/chat/completions";
  req.body = kChatBody;
  if (!model.empty()) req.body.insert(1, "\"model\":\"" + model + "\",");
  req.timeout = 60s;
  auto r = co_await kevlaya::upstream::fetch(ex, ep, req);
  if (!r || r->status != 200) throw std::runtime_error("chat failed: " + (r ? r->body : r.error().message));
}

// Orchestrator: N alternating calls (acquire -> one chat request), each including a full switch.
std::vector<double> orchestrator_calls(const std::string& bin, int n, const std::string& tmp);

// Orchestrator: N alternating switches through Supervisor; share = total - drain - stop - spawn->listening.
kevlaya::config::Config two_profiles(const std::string& bin, const std::string& tmp);
bool health_ok(int port);

std::vector<double> orchestrator_shares(const std::string& bin, int n, const std::string& tmp) {
  auto cfg = two_profiles(bin, tmp);
  asio::io_context ioc;
  const auto shared = std::make_shared<const kevlaya::config::Config>(cfg);
  sv::Supervisor sup(ioc.get_executor(), shared, std::make_unique<sv::ProcessEffects>(ioc, shared));
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

kevlaya::config::Config two_profiles(const std::string& bin, const std::string& tmp) {
  kevlaya::config::Config cfg;
  cfg.profiles = {profile("a", bin, 0), profile("b", bin, 0)};
  cfg.profiles[0].port.reset();
  cfg.profiles[1].port.reset();
  cfg.orch.scheduling.min_residency_ms = 0;
  cfg.orch.scheduling.max_wait_before_swap_ms = 0;
  cfg.orch.log_dir = tmp + "/logs";
  cfg.orch.state_dir = tmp + "/state";
  return cfg;
}

std::vector<double> orchestrator_calls(const std::string& bin, int n, const std::string& tmp) {
  auto cfg = two_profiles(bin, tmp);
  asio::io_context ioc;
  const auto shared = std::make_shared<const kevlaya::config::Config>(cfg);
  sv::Supervisor sup(ioc.get_executor(), shared, std::make_unique<sv::ProcessEffects>(ioc, shared));
  std::vector<double> calls;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i <= n; ++i) {
      auto t0 = Clock::now();
      auto l = co_await sup.acquire(i % 2 ? "b" : "a", Clock::now() + 60s);
      if (!l) throw std::runtime_error(l.error().message);
      auto ep = l->endpoint();
      co_await chat(ioc.get_executor(), ep, "");
      if (i > 0) calls.push_back(ms(Clock::now() - t0));  // the first call has no switch
    }
    co_await sup.shutdown();
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  ioc.run();
  return calls;
}

// llama.cpp router mode: one router process, two copies of the model, at most one loaded at a time.
std::vector<double> router_calls(const std::string& bin, int n, const std::string& tmp) {
  auto dir = std::filesystem::path(tmp) / "router-models";
  std::filesystem::create_directories(dir);
  auto model = std::filesystem::path(KEVLAYA_BENCH_MODELS) / "stories260K.gguf";
  std::filesystem::copy_file(model, dir / "a.gguf");
  std::filesystem::copy_file(model, dir / "b.gguf");
  int port = sv::pick_free_port("127.0.0.1");
  bp::child router(bp::exe = bin,
                   bp::args = std::vector<std::string>{"--models-dir", dir.string(), "--models-max", "1", "-c", "256",
                                                       "-ngl", "0", "--host", "127.0.0.1", "--port", std::to_string(port)},
                   bp::std_out > bp::null, bp::std_err > (std::filesystem::path(tmp) / "router.log").string());
  while (!health_ok(port)) std::this_thread::sleep_for(10ms);
  asio::io_context ioc;
  std::vector<double> calls;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    kevlaya::upstream::Endpoint ep{"127.0.0.1", static_cast<std::uint16_t>(port)};
    for (int i = 0; i <= n; ++i) {
      auto t0 = Clock::now();
      co_await chat(ioc.get_executor(), ep, i % 2 ? "b" : "a");
      if (i > 0) calls.push_back(ms(Clock::now() - t0));
    }
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  ioc.run();
  ::kill(router.id(), SIGTERM);
  router.wait();
  return calls;
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

std::string temp_dir(const std::string& tag) {
  auto p = std::filesystem::temp_directory_path() / ("kevlaya-bench-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

void run(const std::string& label, const std::string& bin, int n) {
  auto tmp = temp_dir("share");
  auto orch = median(orchestrator_shares(bin, n, tmp));
  auto script = median(scripted_shares(bin, std::max(3, n / 4)));
  std::filesystem::remove_all(tmp);
  std::printf("%-22s orchestrator share median %8.1f ms | scripted %8.1f ms | ratio %6.1fx\n", label.c_str(), orch,
              script, script / std::max(orch, 1.0));  // share floored at 1 ms
}

// Whole alternating call (switch + child load + 4-token chat), orchestrator vs router mode,
// interleaved in rounds so machine noise hits both alike.
void run_router(const std::string& bin, int n) {
  constexpr int kRounds = 3;
  std::vector<double> orch, router;
  for (int r = 0; r < kRounds; ++r) {
    auto t1 = temp_dir("calls");
    for (double v : orchestrator_calls(bin, n, t1)) orch.push_back(v);
    std::filesystem::remove_all(t1);
    auto t2 = temp_dir("router");
    for (double v : router_calls(bin, n, t2)) router.push_back(v);
    std::filesystem::remove_all(t2);
  }
  double o = median(orch), rt = median(router);
  std::printf("%-22s per alternating call    %8.1f ms | router mode %8.1f ms | ratio %6.2fx\n",
              "llama-server (real)", o, rt, rt / std::max(o, 0.1));
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20;
  run("stand-in (load 0 ms)", KEVLAYA_STANDIN_PATH, n);
  if (const char* real = std::getenv("KEVLAYA_LLAMA_SERVER"); real && *real) {
    run("llama-server (real)", real, n);
    run_router(real, n);
  }
  return 0;
}
