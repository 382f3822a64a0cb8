// Two simulated GPUs (gpu.devices) with stand-in children: the runtime's placement puts two
// profiles on each device where they take turns; each device rotates on its own, a switch on
// gpu 1 never waits for gpu 0, at most one child per device at every phase change, and every
// child sees its device in CUDA_VISIBLE_DEVICES (read from /proc/PID/environ).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <boost/asio/detached.hpp>
#include <map>
#include <set>

#include "runtime/plan_setup.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "supervisor/process_effects.hpp"
#include "supervisor/state_file.hpp"
#include "support/supervisor_fixture.hpp"
#include "support/proc_probes.hpp"
#include "supervisor/supervisor.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::environ_of;
using kevlaya::test::in;
using kevlaya::test::run_co;

namespace {

// Four stand-in profiles, a0/b0 asking for gpu 0 and a1/b1 for gpu 1, on two simulated 700 MiB
// GPUs: each child's bill (450 MiB overhead + compute) fits a device alone, never two together.
struct TwoGpus {
  test::TempDir dir{"sup-devices"};
  std::string tag = "dev" + std::to_string(::getpid()) + "-";
  config::Config cfg;
  runtime::ResidencySetup setup;

  TwoGpus() {
    std::vector<config::Profile> ps;
    for (const char* name : {"a0", "b0", "a1", "b1"}) {
      const auto model = dir / (tag + name + ".gguf");  // a tag per child, to find it in /proc
      std::filesystem::create_symlink(test::tiny_llama(), model);
      auto p = test::fast_profile(name, test::standin_binary().string(), model);
      p.gpu = {name[1] - '0'};
      ps.push_back(std::move(p));
    }
    cfg = test::fast_config(std::move(ps), dir.path());
    cfg.orch.gpu.devices = {{700, "sim0"}, {700, "sim1"}};
    cfg.orch.gpu.reserve_mib = 0;
    cfg.orch.gpu.overhead_mib = 450;
    setup = runtime::setup_residency(cfg);
    runtime::apply_placements(cfg, setup);
  }
  int on_device(int gpu) const {
    int n = 0;
    for (const auto& p : cfg.profiles) {
      if (p.gpu.front() == gpu) n += test::group_leaders_with_arg(tag + p.name + ".gguf");
    }
    return n;
  }
};

// Samples, at every phase change, how many children each device has alive.
struct Sampler {
  int max_per_device = 0, max_total = 0, samples = 0;
  void sample(const TwoGpus& m) {
    const int g0 = m.on_device(0), g1 = m.on_device(1);
    max_per_device = std::max({max_per_device, g0, g1});
    max_total = std::max(max_total, g0 + g1);
    ++samples;
  }
};

}  // namespace

TEST_CASE("devices: the plan places two profiles per simulated GPU, rotating per device") {
  TwoGpus m;
  REQUIRE(m.setup.devices.size() == 2);
  for (const auto& p : m.cfg.profiles) {
    CHECK(p.placement.devices == p.gpu);
    CHECK(p.placement.visible == std::to_string(p.gpu.front()));
  }
  for (const auto& c : m.setup.options.children) {  // what the supervisor runs carries it
    INFO(c.name);
    CHECK(c.placement.devices == m.cfg.find_profile(c.name)->gpu);
  }
  std::set<std::set<std::string>> sets;
  for (const auto& s : m.setup.options.allowed_sets) sets.insert(std::set<std::string>(s.begin(), s.end()));
  CHECK(sets == std::set<std::set<std::string>>{{"a0", "a1"}, {"a0", "b1"}, {"b0", "a1"}, {"b0", "b1"}});
  CHECK(m.setup.options.devices.size() == 2);
}

TEST_CASE("devices: a switch on gpu 1 does not wait for a switch on gpu 0 held by a busy child") {
  TwoGpus m;
  asio::io_context ioc;
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(m.cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(m.cfg)), m.setup.options);
  bool draining_a0 = false;
  auto sub = sup.subscribe([&](const Event& e) {
    if (e.type == Event::Type::phase && e.child == "a0" && e.to == Phase::draining) draining_a0 = true;
  });
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto a0 = co_await sup.acquire("a0", in(30s));  // held: gpu 0 cannot switch until it is released
    REQUIRE(a0.ok());
    auto a1 = co_await sup.acquire("a1", in(30s));
    REQUIRE(a1.ok());
    a1->release();
    std::optional<Result<Lease>> b0;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { b0 = co_await sup.acquire("b0", in(30s)); }, asio::detached);
    while (!draining_a0) co_await test::sleep_for(5ms);  // b0 is queued first, gpu 0 drains a0
    auto b1 = co_await sup.acquire("b1", in(30s));  // queued after b0, on the other device
    REQUIRE(b1.ok());
    CHECK_FALSE(b0.has_value());  // gpu 0 is still waiting for a0's lease
    CHECK(a0->valid());
    a0->release();
    b1->release();
    while (!b0) co_await test::sleep_for(5ms);
    CHECK(b0->ok());
    if (b0->ok()) (*b0)->release();
    const auto snap = co_await sup.snapshot();
    for (const auto& p : snap.profiles) CHECK(p.gpus == std::vector<int>{p.name[1] - '0'});
    co_await sup.shutdown();
  });
}

TEST_CASE("devices: both GPUs rotate at once, one child per device at every switch, CUDA_VISIBLE_DEVICES") {
  TwoGpus m;
  asio::io_context ioc;
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(m.cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(m.cfg)), m.setup.options);
  Sampler s;
  std::map<std::string, std::vector<int>> event_gpus;
  auto sub = sup.subscribe([&](const Event& e) {  // on the supervisor's strand, at every phase change
    if (e.type != Event::Type::phase) return;
    s.sample(m);
    event_gpus[e.child] = e.gpus;
  });
  std::map<std::string, std::map<std::string, std::string>> env;  // profile -> its child's environment
  constexpr int kSwitches = 8;  // per device
  auto alternate = [&](std::string x, std::string y) -> asio::awaitable<void> {
    for (int i = 0; i < kSwitches; ++i) {
      const std::string name = i % 2 ? y : x;
      auto l = co_await sup.acquire(name, in(30s));
      CHECK(l.ok());  // (no REQUIRE: an exception would not leave a detached coroutine)
      if (!l.ok()) co_return;
      const auto pids = test::pids_with_arg(m.tag + name + ".gguf");
      for (const int pid : pids) {
        if (::getpgid(pid) == pid) env[name] = environ_of(pid);
      }
      co_await test::sleep_for(2ms);  // hold the lease a moment, so the other device's work interleaves
      l->release();
    }
  };
  run_co(ioc, [&]() -> asio::awaitable<void> {
    int done = 0;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { co_await alternate("a0", "b0"); ++done; }, asio::detached);
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { co_await alternate("a1", "b1"); ++done; }, asio::detached);
    while (done < 2) co_await test::sleep_for(5ms);
    const auto snap = co_await sup.snapshot();
    // Each switch record stays on one device: the per-device records do not mix.
    for (const auto& r : snap.recent_switches) {
      if (!r.from.empty()) CHECK(r.from.back() == r.to.back());
    }
    CHECK(snap.recent_switches.size() >= 2 * kSwitches);
    co_await sup.shutdown();
  });
  CHECK(s.samples >= 4 * kSwitches);
  CHECK(s.max_per_device == 1);
  CHECK(s.max_total == 2);  // the two devices had a child at the same time
  for (const char* name : {"a0", "b0", "a1", "b1"}) {
    INFO(name);
    REQUIRE(env.count(name));
    CHECK(env[name]["CUDA_VISIBLE_DEVICES"] == std::string(1, name[1]));
    CHECK(env[name]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID");
    CHECK(event_gpus[name] == std::vector<int>{name[1] - '0'});
  }
  for (const char* name : {"a0", "b0", "a1", "b1"}) CHECK(test::pids_with_arg(m.tag + name).empty());
}
