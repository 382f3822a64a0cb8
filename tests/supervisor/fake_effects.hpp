// Fake Effects for supervisor tests: no processes; records starts/stops, checks that two models
// that may not co-reside are never "alive" together, and can fail, hang or throw on start.
#pragma once
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "supervisor/support.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::test {

using supervisor::ChildFailure;
using supervisor::Effects;
using supervisor::StartOutcome;
using supervisor::StartReport;
using supervisor::StopReport;

struct FakeWorld {
  std::vector<std::string> events;  // "start kev", "stop kev"
  std::set<std::string> alive;
  std::size_t max_alive = 0;
  std::map<std::string, std::vector<ChildFailure>> start_failures;  // consumed per start
  std::map<std::string, Effects::ExitCallback> exits;
  std::chrono::milliseconds start_delay{5};
  int next_port = 40000;
  bool start_hangs = false;        // start() never completes (the watchdog must end it)
  bool start_throws = false;       // start() throws (a bug in the effects)
  std::set<std::string> exited;    // exited(profile) answers true (the process is gone)
  std::set<std::string> silent;    // responsive(profile) answers false (a stopped process)
  std::optional<std::uint64_t> ram_available;  // host_ram_available(); nullopt = unknown
  int ram_reads = 0;                           // how often the supervisor asked
};

class FakeEffects : public Effects {
 public:
  explicit FakeEffects(FakeWorld& w) : w_(w) {}
  asio::awaitable<StartOutcome> start(const config::Profile& p, ExitCallback on_exit) override {
    w_.events.push_back("start " + p.name);
    w_.alive.insert(p.name);
    w_.max_alive = std::max(w_.max_alive, w_.alive.size());
    if (w_.start_throws) throw std::runtime_error("state file: invalid UTF-8");
    co_await sleep_for(w_.start_hangs ? std::chrono::milliseconds(std::chrono::hours(1)) : w_.start_delay);
    StartOutcome out;
    auto& fails = w_.start_failures[p.name];
    if (!fails.empty()) {
      out.failure = fails.front();
      fails.erase(fails.begin());
      w_.alive.erase(p.name);
      co_return out;
    }
    w_.exits[p.name] = std::move(on_exit);
    StartReport r;
    r.endpoint.port = static_cast<std::uint16_t>(w_.next_port++);
    r.pid = 1;
    out.report = r;
    co_return out;
  }
  asio::awaitable<StopReport> stop(const std::string& profile) override {
    w_.events.push_back("stop " + profile);
    co_await sleep_for(std::chrono::milliseconds(2));
    w_.alive.erase(profile);
    co_return StopReport{};
  }
  bool exited(const std::string& profile) override { return w_.exited.count(profile) > 0; }
  asio::awaitable<bool> responsive(const std::string& profile) override {
    w_.events.push_back("probe " + profile);
    co_return w_.silent.count(profile) == 0;
  }
  void kill(const std::string& profile) override {
    w_.events.push_back("kill " + profile);
    w_.silent.erase(profile);  // the next start of it answers again
  }
  std::optional<std::uint64_t> host_ram_available() override {
    ++w_.ram_reads;
    return w_.ram_available;
  }

 private:
  FakeWorld& w_;
};

}  // namespace kevlaya::test
