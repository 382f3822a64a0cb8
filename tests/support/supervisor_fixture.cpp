#include "support/supervisor_fixture.hpp"

#include <catch2/catch.hpp>

namespace kevlaya::test {

namespace fs = std::filesystem;

config::Profile fast_profile(const std::string& name, const std::string& binary, const fs::path& model,
                             std::vector<std::string> extra) {
  config::Profile p;
  p.name = name;
  p.binary = binary;
  p.model = model;
  p.ctx = 256;
  p.ngl = 0;
  p.parallel = 1;
  p.extra_args = std::move(extra);
  p.health.first_probe_ms = 10;
  p.health.interval_ms = 20;
  p.health.probe_timeout_ms = 500;
  p.health.startup_timeout_s = 20;
  p.health.stall_timeout_s = 20;
  p.stop.grace_s = 5;
  p.restart.backoff_initial_ms = 20;
  p.restart.backoff_max_s = 1;
  p.restart.max_restarts = 5;
  p.restart.window_s = 60;
  p.restart.cooldown_s = 30;
  return p;
}

config::Config fast_config(std::vector<config::Profile> profiles, const fs::path& dir) {
  config::Config c;
  c.profiles = std::move(profiles);
  c.orch.scheduling.min_residency_ms = 0;
  c.orch.scheduling.max_wait_before_swap_ms = 0;
  c.orch.scheduling.drain_timeout_s = 10;
  if (dir.empty()) return c;  // nothing kept: no test reads another's state (load times)
  c.orch.state_dir = dir / "state";
  c.orch.log_dir = dir / "logs";
  return c;
}

config::Config kev_and_laya() {
  auto kev = fast_profile("kev", "x", "/m/kev.gguf");
  kev.alias = {"decider"};
  return fast_config({kev, fast_profile("laya", "x", "/m/laya.gguf")}, std::filesystem::path());
}

SupervisorFixture::SupervisorFixture(config::Config cfg, supervisor::SupervisorOptions opts)
    : sup(ioc.get_executor(), std::make_shared<const config::Config>(std::move(cfg)), std::make_unique<FakeEffects>(world), record_ready(std::move(opts))),
      sub(sup.subscribe([this](const supervisor::Event& e) { events.push_back(e); })) {}

supervisor::SupervisorOptions SupervisorFixture::record_ready(supervisor::SupervisorOptions opts) {
  opts.on_ready = [this, inner = std::move(opts.on_ready)](const ledger::ChildSpec& c, const StartReport& r) {
    world.ready.push_back(c.name);
    if (inner) inner(c, r);
  };
  return opts;
}

asio::awaitable<bool> SupervisorFixture::until_alive(const std::string& profile, bool alive,
                                                     std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while ((world.alive.count(profile) > 0) != alive && std::chrono::steady_clock::now() < end)
    co_await sleep_for(std::chrono::milliseconds(10));
  co_return (world.alive.count(profile) > 0) == alive;
}

asio::awaitable<bool> SupervisorFixture::ready(const std::string& name) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    for (const auto& p : (co_await sup.snapshot()).profiles)
      if (p.name == name && p.state == supervisor::Phase::ready) co_return true;
    co_await sleep_for(std::chrono::milliseconds(1));
  }
  co_return false;
}

asio::awaitable<std::int64_t> SupervisorFixture::call(const std::string& model) {
  auto l = co_await sup.acquire(model, in(std::chrono::seconds(2)));
  REQUIRE(l.ok());
  const auto ms = l->switch_ms();
  l->release();
  co_return ms;
}

std::vector<std::string> SupervisorFixture::unload_reasons() const {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.type == supervisor::Event::Type::unload) out.push_back(e.child + ":" + e.reason);
  return out;
}

const supervisor::ProfileStatus* SupervisorFixture::status(const supervisor::Snapshot& s, const std::string& name) {
  for (const auto& p : s.profiles)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kevlaya::test
