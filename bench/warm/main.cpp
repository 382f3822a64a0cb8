// Warm-switch benchmark (docs/warm.md), measured side by side in one run:
//  (a) child start-to-ready for a large GGUF whose pages were dropped (POSIX_FADV_DONTNEED), without
//      and with a background prefetch before the start, against the same start with the file cached;
//  (b) first-token latency (n_predict=1) of a request with a long shared prefix right after a switch,
//      without and with the KV slot restore (slot_cache.enabled).
// (a) runs with the real llama-server ($KEVLAYA_LLAMA_SERVER): the stand-in does not read tensor
// data, so the page cache does not change its load time. (b) runs with the stand-in (simulated
// prefill cost) and, when set, the real binary on stories260K.
// Usage: kevlaya_bench_warm [RUNS] [BIG_MIB]
#include <utility>

#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ledger/children.hpp"
#include "supervisor/process_effects.hpp"
#include "upstream/client.hpp"
#include "warm/page_cache.hpp"
#include "warm/prefetcher.hpp"
#include "../stats.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace sv = kevlaya::supervisor;
namespace warm = kevlaya::warm;
using Clock = std::chrono::steady_clock;

namespace {

using kevlaya::bench::median;
using kevlaya::bench::ms;

template <class F>
void run_co(asio::io_context& ioc, F make) {
  asio::co_spawn(ioc, make(), [&](std::exception_ptr e) {
    ioc.stop();
    if (e) std::rethrow_exception(e);
  });
  ioc.run();
  ioc.restart();
}

kevlaya::config::Profile profile(const std::string& bin, const fs::path& model, int ctx) {
  kevlaya::config::Profile p;
  p.name = "bench";
  p.binary = bin;
  p.model = model;
  p.ngl = 0;
  p.ctx = ctx;
  p.health.first_probe_ms = 5;
  p.health.interval_ms = 10;
  p.health.startup_timeout_s = 600;
  p.health.stall_timeout_s = 600;
  return p;
}

kevlaya::config::Config config_in(const fs::path& dir) {
  kevlaya::config::Config c;
  c.orch.state_dir = dir / "state";
  c.orch.log_dir = dir / "logs";
  c.orch.prefetch.enabled = false;  // the benchmark drives the prefetcher itself, to time it apart
  return c;
}

// Starts `p` (returns start-to-ready ms and the endpoint), stops it when `stop` is true.
struct Started {
  double ready_ms = 0;
  sv::StartReport report;
};

Started start(asio::io_context& ioc, sv::ProcessEffects& fx, const kevlaya::config::Profile& p) {
  Started s;
  const auto child = kevlaya::ledger::lone_child(std::make_shared<const kevlaya::config::Profile>(p));
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto t0 = Clock::now();
    auto out = co_await fx.start(*child, [](sv::ChildFailure) {});
    s.ready_ms = ms(Clock::now() - t0);
    if (!out.ok()) throw std::runtime_error("start failed: " + out.failure.message);
    s.report = *out.report;
  });
  return s;
}

sv::StopReport stop(asio::io_context& ioc, sv::ProcessEffects& fx) {
  sv::StopReport r;
  run_co(ioc, [&]() -> asio::awaitable<void> { r = co_await fx.stop("bench"); });
  return r;
}

double request_ms(asio::io_context& ioc, const kevlaya::upstream::Endpoint& ep, const std::string& prompt,
                  int* prompt_n = nullptr) {
  double t = 0;
  run_co(ioc, [&]() -> asio::awaitable<void> {
    kevlaya::upstream::Request req;
    req.method = "POST";
    req.target = "/completion";
    req.body = nlohmann::json{{"prompt", prompt}, {"n_predict", 1}, {"temperature", 0}}.dump();
    req.timeout = std::chrono::seconds(600);
    auto t0 = Clock::now();
    auto res = co_await kevlaya::upstream::fetch(ioc.get_executor(), ep, req);
    t = ms(Clock::now() - t0);
    if (!res || res->status != 200) throw std::runtime_error("completion failed");
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (prompt_n && j.is_object() && j.contains("timings")) *prompt_n = j["timings"].value("prompt_n", -1);
  });
  return t;
}

// (a) start-to-ready: cold file, cold file + prefetch first, cached file.
void bench_prefetch(const std::string& bin, const fs::path& model, int runs) {
  asio::io_context ioc;
  fs::path dir = fs::temp_directory_path() / "kevlaya-bench-warm-a";
  const auto cfg = config_in(dir);
  sv::ProcessEffects fx(ioc, std::make_shared<const kevlaya::config::Config>(cfg));
  auto p = profile(bin, model, 512);
  std::vector<double> cold, pre, cached, pre_ms;
  warm::Prefetcher pf({0, 16ULL << 20, true, {}});
  ::sync();  // dirty pages of a freshly written model cannot be dropped
  for (int i = 0; i < runs; ++i) {
    if (!warm::drop_from_cache(model).ok()) throw std::runtime_error("cannot drop the model");
    double pct_cold = warm::resident_pct(model);
    cold.push_back(start(ioc, fx, p).ready_ms);
    stop(ioc, fx);
    warm::drop_from_cache(model);
    auto t0 = Clock::now();
    pf.prefetch({model});
    pf.wait_idle();
    pre_ms.push_back(ms(Clock::now() - t0));
    const double pct_pre = warm::resident_pct(model);
    pre.push_back(start(ioc, fx, p).ready_ms);
    stop(ioc, fx);
    cached.push_back(start(ioc, fx, p).ready_ms);
    stop(ioc, fx);
    std::printf("  run %d: cold %.0f ms (resident %.0f%%), after prefetch %.0f ms (resident %.0f%%, prefetch took %.0f ms), "
                "cached %.0f ms\n", i + 1, cold.back(), pct_cold, pre.back(), pct_pre, pre_ms.back(), cached.back());
  }
  auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  std::printf("  best of %d (least disturbed by other load): cold %.0f ms | prefetched %.0f ms | cached %.0f ms\n", runs,
              lo(cold), lo(pre), lo(cached));
  double c = median(cold), w = median(pre), k = median(cached);
  std::printf("  median start-to-ready: cold %.0f ms | prefetched %.0f ms | cached %.0f ms\n", c, w, k);
  std::printf("  ratio cold/prefetched %.2fx; prefetched/cached %.2fx (goal <= 1.2x); prefetch %.0f ms in the background\n",
              w > 0 ? c / w : 0, k > 0 ? w / k : 0, median(pre_ms));
  fs::remove_all(dir);
}

// (b) first-token latency of a long shared prefix after a switch, with and without slot restore.
void bench_restore(const std::string& label, const std::string& bin, const fs::path& model,
                   std::vector<std::string> extra, int words, int runs) {
  asio::io_context ioc;
  fs::path dir = fs::temp_directory_path() / "kevlaya-bench-warm-b";
  fs::remove_all(dir);
  const auto cfg = config_in(dir);
  sv::ProcessEffects fx(ioc, std::make_shared<const kevlaya::config::Config>(cfg));
  std::string prefix;
  for (int i = 0; i < words; ++i) prefix += "once upon a time " + std::to_string(i) + " ";
  std::vector<double> cold, restored, save, restore;
  int n_cold = -1, n_restored = -1;  // prompt tokens the server processed (timings.prompt_n)
  for (int i = 0; i < runs; ++i) {
    for (bool slots : {false, true}) {
      auto p = profile(bin, model, 2048);
      p.extra_args = extra;
      p.slot_cache.enabled = slots;
      auto s = start(ioc, fx, p);
      request_ms(ioc, s.report.endpoint, prefix + "the end");  // the slot now holds the prefix
      auto st = stop(ioc, fx);                                 // switch away (saves when enabled)
      auto again = start(ioc, fx, p);                          // switch back (restores when enabled)
      double t = request_ms(ioc, again.report.endpoint, prefix + "and then", &(slots ? n_restored : n_cold));
      stop(ioc, fx);
      (slots ? restored : cold).push_back(t);
      if (slots) {
        save.push_back(double(st.save_ms));
        restore.push_back(double(again.report.restore_ms));
      }
    }
  }
  double c = median(cold), r = median(restored);
  std::printf("  %s: first token cold %.1f ms (%d prompt tokens) | restored %.1f ms (%d) = %.1f%% of cold (goal <= 5%%); "
              "save %.0f ms, restore %.0f ms\n",
              label.c_str(), c, n_cold, r, n_restored, c > 0 ? 100.0 * r / c : 0, median(save), median(restore));
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 3;
  const int big_mib = argc > 2 ? std::atoi(argv[2]) : 400;
  const char* real = std::getenv("KEVLAYA_LLAMA_SERVER");
  const fs::path stories = fs::path(KEVLAYA_BENCH_MODELS) / "stories260K.gguf";
  try {
    std::printf("(b) first token after a switch, long shared prefix, without vs with slot restore (%d runs)\n", runs);
    bench_restore("stand-in (1 ms/token prefill)", KEVLAYA_STANDIN_PATH, stories,
                  {"--fake-load-ms", "0", "--fake-prefill-us-per-token", "1000"}, 250, runs);
    if (!real) {
      std::printf("(a) skipped: set KEVLAYA_LLAMA_SERVER (the stand-in does not read tensor data)\n");
      return 0;
    }
    bench_restore("llama-server, stories260K", real, stories, {}, 120, runs);
    fs::path big = fs::temp_directory_path() / "kevlaya-bench-warm-big.gguf";
    if (!fs::exists(big)) {
      std::string cmd = std::string(KEVLAYA_GGUF_TOOL_PATH) + " model --out " + big.string() + " --big-mib " +
                        std::to_string(big_mib) + " > /dev/null";
      if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot write " + big.string());
    }
    std::printf("(a) llama-server start-to-ready, %ju MiB F16 model, page cache dropped before each cold run\n",
                static_cast<std::uintmax_t>(fs::file_size(big) >> 20));
    bench_prefetch(real, big, runs);
  } catch (const std::exception& e) {
    std::cerr << "bench failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
