// `kevlaya-orch up CONFIG PROFILE... [--cycle N]`: start the given profiles one at a time (the
// last one stays resident), optionally rotate through them N times, print every switch with its
// phases, and stay in the foreground until SIGINT/SIGTERM (graceful stop; a second signal kills).
#include <utility>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "runtime/runtime.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::cli {

namespace {

namespace asio = boost::asio;
namespace sv = kevlaya::supervisor;

struct UpArgs {
  std::string config;
  std::vector<std::string> profiles;
  int cycle = 0;
};

void print_switch(const sv::SwitchRecord& r) {
  std::cout << "switch " << (r.from.empty() ? "-" : r.from) << " -> " << r.to << (r.ok ? "" : " FAILED")
            << ": drain " << r.drain_ms << " ms, stop " << r.stop_ms << " ms, vram " << r.vram_wait_ms
            << " ms, spawn->listening " << r.spawn_to_listening_ms << " ms, detect " << r.detect_ms
            << " ms, total " << r.total_ms << " ms";
  if (r.save_ms || r.restore_ms) std::cout << " (slot save " << r.save_ms << " ms, restore " << r.restore_ms << " ms)";
  if (r.prefetch_resident_pct >= 0) std::cout << ", model " << static_cast<int>(r.prefetch_resident_pct) << "% cached";
  std::cout << std::endl;
}

void print_error(const std::string& profile, const Error& e) {
  std::cerr << "kevlaya-orch up: " << profile << ": " << to_string(e.code) << ": " << e.message << "\n";
  if (!e.hint.empty()) std::cerr << "  hint: " << e.hint << "\n";
  for (const auto& l : e.detail) std::cerr << "  | " << l << "\n";
}

// Brings each profile up in turn, `rounds` times, until the first signal (whose drain stops the
// children: a start refused by it is not a failure). Returns how many starts failed.
asio::awaitable<int> rotate(runtime::Runtime& rt, const UpArgs& a, int rounds) {
  constexpr auto kReadyWait = std::chrono::minutes(10);
  int failed = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const auto& p : a.profiles) {
      if (rt.interrupted()) co_return failed;
      auto st = co_await rt.sup().ensure_ready(p, std::chrono::steady_clock::now() + kReadyWait);
      if (!st.ok() && !rt.interrupted()) {
        print_error(p, st.error());
        ++failed;
      }
    }
  }
  co_return failed;
}

int run_up(const UpArgs& a) {
  auto loaded = config::load(a.config);
  for (const auto& d : loaded.diagnostics) std::cerr << d.format() << "\n";
  if (!loaded.ok()) return kExitFailure;
  for (const auto& p : a.profiles) {
    if (!loaded.config.find_profile(p)) {
      std::cerr << "kevlaya-orch up: unknown profile '" << p << "'\n";
      return kExitFailure;
    }
  }
  auto rt = runtime::Runtime::open(loaded.config);
  if (!rt) {
    print_error("start", rt.error());
    return kExitFailure;
  }
  if ((*rt)->stale_killed() > 0)
    std::cout << "killed " << (*rt)->stale_killed() << " leftover child(ren) of a previous run" << std::endl;
  auto& sup = (*rt)->sup();
  auto printing = sup.subscribe([](const sv::Event& e) {
    if (e.type == sv::Event::Type::switch_done) print_switch(e.record);
  });

  int exit_code = kExitOk;
  (*rt)->on_first_signal([] { std::cout << "stopping (again to kill)..." << std::endl; });
  const bool interrupted = (*rt)->run([&]() -> asio::awaitable<void> {
    int failed = co_await rotate(**rt, a, std::max(1, a.cycle));
    if ((*rt)->interrupted()) co_return;  // not "up": the signal's drain is stopping the children
    if (failed == static_cast<int>(a.profiles.size()) * std::max(1, a.cycle)) {
      exit_code = kExitFailure;  // nothing ever came up: no point staying in the foreground
      co_return;
    }
    std::cout << "up; Ctrl-C to stop" << std::endl;
    co_await (*rt)->until_signal();
  });
  return interrupted && exit_code == kExitOk ? kExitInterrupted : exit_code;
}

}  // namespace

void add_up(CLI::App& app, Globals& g) {
  auto args = std::make_shared<UpArgs>();
  auto* sub = app.add_subcommand("up", "start profiles one at a time and stay in the foreground");
  sub->add_option("config", args->config, "orchestrator config (kevlaya.yaml)")->required();
  sub->add_option("profiles", args->profiles, "profiles to start, in order")->required();
  sub->add_option("--cycle", args->cycle, "rotate through the profiles N times (prints each switch)")
      ->check(CLI::NonNegativeNumber);
  sub->callback([&g, args] { g.exit_code = run_up(*args); });
}

}  // namespace kevlaya::cli
