// Shared-base benchmark: what switching between Kev and Laya costs a request when both are LoRA
// adapters on one base served by ONE child (the `lora` field selects the adapter), against the
// same alternation done by rotating two children (a process switch per call), in one run on the
// same stand-in, interleaved in rounds so machine noise hits every mode alike.
//   same model    : acquire + completion, always the same profile (no switch at all)
//   shared base   : acquire + completion, alternating kev/laya on one child (lora field)
//   rotate        : acquire + completion, alternating kev/laya, each on its own child
// "added by switching" = shared-base median - same-model median (the bound: <= 2 ms).
// With $KEVLAYA_LLAMA_SERVER set, the same three modes also run on the real binary.
// Usage: kevlaya_bench_sharedbase [N]
#include <utility>

#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "gguf/writer.hpp"
#include "supervisor/child_body.hpp"
#include "supervisor/process_effects.hpp"
#include "supervisor/supervisor.hpp"
#include "upstream/client.hpp"
#include "../stats.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace sv = kevlaya::supervisor;
namespace gg = kevlaya::gguf;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int kRounds = 3;

using kevlaya::bench::median;
using kevlaya::bench::ms;

struct Models {
  fs::path base, lora_a, lora_b;
};

// The project's stand-in models: kev-tiny and its two adapters.
Models write_models(const fs::path& dir) {
  auto f = gg::write_standins(dir);
  if (!f) throw std::runtime_error(f.error().message);
  return Models{f->kev, f->kev_lora_a, f->kev_lora_b};
}

kevlaya::config::Profile profile(const std::string& name, const std::string& bin, const Models& m,
                                 const fs::path& adapter) {
  kevlaya::config::Profile p;
  p.name = name;
  p.binary = bin;
  p.model = m.base;
  p.ngl = 0;
  p.ctx = 256;
  p.lora = {{name, adapter, 1.0}};
  if (bin == KEVLAYA_STANDIN_PATH) p.extra_args = {"--fake-load-ms", "0"};
  return p;
}

kevlaya::config::Config config(const std::string& bin, const Models& m, const fs::path& tmp) {
  kevlaya::config::Config cfg;
  cfg.profiles = {profile("kev", bin, m, m.lora_a), profile("laya", bin, m, m.lora_b)};
  cfg.orch.scheduling.min_residency_ms = 0;
  cfg.orch.scheduling.max_wait_before_swap_ms = 0;
  cfg.orch.log_dir = tmp / "logs";
  cfg.orch.state_dir = tmp / "state";
  return cfg;
}

// What the planner gives the supervisor for kev + laya on one base.
sv::SupervisorOptions shared_options(const kevlaya::config::Config& cfg) {
  kevlaya::ledger::ChildSpec g;
  g.members = {"kev", "laya"};
  g.name = kevlaya::ledger::shared_child_name(g.members);
  for (const auto& p : cfg.profiles) g.adapters.push_back({p.lora[0].name, p.lora[0].path.string(), 0, 1.0});
  g.scales = {{"kev", {{0, 1.0}, {1, 0.0}}}, {"laya", {{0, 0.0}, {1, 1.0}}}};
  sv::SupervisorOptions o;
  o.children = {g};
  return o;
}

// One greedy 4-token /completion, with the lease's `lora` field as the REST door adds it.
asio::awaitable<void> complete(asio::any_io_executor ex, const sv::Lease& lease) {
  nlohmann::ordered_json body = {{"prompt", "Once upon a time"}, {"n_predict", 4}, {"temperature", 0}};
  sv::set_child_fields(body, "", lease.lora_scales());
  kevlaya::upstream::Request req;
  req.method = "POST";
  req.target = "/completion";
  req.body = body.dump();
  req.timeout = 60s;
  const auto ep = lease.endpoint();  // named: GCC 12 mishandles braced temporaries in co_await
  auto r = co_await kevlaya::upstream::fetch(ex, ep, req);
  if (!r || r->status != 200) throw std::runtime_error("completion failed: " + (r ? r->body : r.error().message));
}

// N calls (acquire + completion), naming `pick(i)`; the first call (a cold start) is not counted.
template <class Pick>
std::vector<double> calls(const kevlaya::config::Config& cfg, sv::SupervisorOptions opt, int n, Pick pick) {
  asio::io_context ioc;
  const auto shared = std::make_shared<const kevlaya::config::Config>(cfg);
  sv::Supervisor sup(ioc.get_executor(), shared, std::make_unique<sv::ProcessEffects>(ioc, shared), std::move(opt));
  std::vector<double> out;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i <= n; ++i) {
      const auto t0 = Clock::now();
      auto l = co_await sup.acquire(pick(i), Clock::now() + 60s);
      if (!l) throw std::runtime_error(l.error().message);
      co_await complete(ioc.get_executor(), *l);
      if (i > 0) out.push_back(ms(Clock::now() - t0));
    }
    co_await sup.shutdown();
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  ioc.run();
  return out;
}

void run(const std::string& label, const std::string& bin, int n) {
  const auto tmp = fs::temp_directory_path() / ("kevlaya-bench-sharedbase-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const auto models = write_models(tmp);
  const auto cfg = config(bin, models, tmp);
  const auto alternate = [](int i) { return std::string(i % 2 ? "laya" : "kev"); };
  std::vector<double> same, shared, rotate;
  for (int r = 0; r < kRounds; ++r) {
    for (double v : calls(cfg, shared_options(cfg), n, [](int) { return std::string("kev"); })) same.push_back(v);
    for (double v : calls(cfg, shared_options(cfg), n, alternate)) shared.push_back(v);
    for (double v : calls(cfg, {}, std::max(3, n / 4), alternate)) rotate.push_back(v);
  }
  fs::remove_all(tmp);
  const double s = median(same), sb = median(shared), rt = median(rotate);
  std::printf("%-22s same model %7.2f ms | shared base alternating %7.2f ms (added %+6.2f ms) | rotate "
              "alternating %8.2f ms | rotate/shared %7.1fx\n",
              label.c_str(), s, sb, sb - s, rt, rt / std::max(sb, 0.01));
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 40;
  run("stand-in (load 0 ms)", KEVLAYA_STANDIN_PATH, n);
  if (const char* real = std::getenv("KEVLAYA_LLAMA_SERVER"); real && *real) run("llama-server (real)", real, n);
  return 0;
}
