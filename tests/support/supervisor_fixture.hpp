// The one supervisor fixture of the tests: fast profiles and configs, and a real Supervisor over
// the fake Effects (support/fake_effects.hpp) on an io_context the test runs with run_co.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "supervisor/supervisor.hpp"
#include "support/coro.hpp"  // run_co, sleep_for, in
#include "support/fake_effects.hpp"

namespace kevlaya::test {

namespace asio = boost::asio;

// A profile named `name` that runs `binary` on `model`, with fast health/stop/restart settings.
config::Profile fast_profile(const std::string& name, const std::string& binary,
                             const std::filesystem::path& model, std::vector<std::string> extra = {});

// Fast scheduling settings (no grouping delay, no residency floor).
config::Config fast_config(std::vector<config::Profile> profiles, const std::filesystem::path& dir);

// kev (alias "decider") and laya, fast settings, nothing on disk.
config::Config kev_and_laya();

// A Supervisor over FakeEffects(world); `events` holds every event it published, and
// world.ready every on_ready call (the options' own on_ready still runs).
struct SupervisorFixture {
  asio::io_context ioc;
  FakeWorld world;
  std::vector<supervisor::Event> events;
  supervisor::Supervisor sup;
  supervisor::Subscription sub;
  explicit SupervisorFixture(config::Config cfg = kev_and_laya(), supervisor::SupervisorOptions opts = {});

  // Waits (bounded) until `profile` is alive or not.
  asio::awaitable<bool> until_alive(const std::string& profile, bool alive,
                                    std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Until `name` is ready (bounded, 10 s): what runs while nobody waits (a guess, a preload).
  asio::awaitable<bool> ready(const std::string& name);
  // One call to `model`, released at once; returns the lease's switch_ms.
  asio::awaitable<std::int64_t> call(const std::string& model);
  // "child:reason" of every unload event, in order.
  std::vector<std::string> unload_reasons() const;
  static const supervisor::ProfileStatus* status(const supervisor::Snapshot& s, const std::string& name);

 private:
  supervisor::SupervisorOptions record_ready(supervisor::SupervisorOptions opts);
};

}  // namespace kevlaya::test
