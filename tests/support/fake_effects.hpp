// The one fake Effects of the tests: no processes; records starts/stops/probes/kills, checks that
// two models that may not co-reside are never "alive" together, and can fail, hang or throw on
// start. A door test points every child at one scripted upstream (upstream_port) and reports a
// crash from its own thread (report_crash), hence the mutex.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "supervisor/supervisor.hpp"
#include "support/coro.hpp"  // sleep_for

namespace kevlaya::test {

using supervisor::ChildFailure;
using supervisor::Effects;
using supervisor::StartOutcome;
using supervisor::StartReport;
using supervisor::StopReport;

struct FakeWorld {
  std::vector<std::string> events;       // "start kev", "stop kev", "probe kev", "kill kev"
  std::vector<config::Profile> started;  // the profiles passed to start()
  std::vector<std::string> ready;        // SupervisorOptions::on_ready calls (SupervisorFixture)
  std::set<std::string> alive;
  std::size_t max_alive = 0;
  std::map<std::string, std::vector<ChildFailure>> start_failures;  // consumed per start
  std::map<std::string, ChildFailure> always_fail;                   // every start of it fails
  std::map<std::string, Effects::ExitCallback> exits;
  std::mutex mu;  // guards alive and exits (report_crash runs on a test thread)
  std::atomic<int> starts{0};
  std::chrono::milliseconds start_delay{5};
  std::chrono::milliseconds stop_delay{2};  // 0: stop() completes without suspending
  int next_port = 40000;
  std::uint16_t upstream_port = 0;  // nonzero: every child answers at 127.0.0.1:upstream_port
  int pid = 1;                      // StartReport::pid
  bool report_load_time = false;    // StartReport::total_ms = start_delay
  bool start_hangs = false;         // start() never completes (the watchdog must end it)
  bool start_throws = false;        // start() throws (a bug in the effects)
  std::set<std::string> exited;     // exited(profile) answers true (the process is gone)
  std::set<std::string> silent;     // responsive(profile) answers false (a stopped process)
  std::optional<std::uint64_t> ram_available;  // host_ram_available(); nullopt = unknown
  int ram_reads = 0;                           // how often the supervisor asked

  // The child of `profile` "dies" (from any thread); nothing when it is not alive.
  void report_crash(const std::string& profile, const ChildFailure& f) {
    Effects::ExitCallback cb;
    {
      std::lock_guard lk(mu);
      auto it = exits.find(profile);
      if (it == exits.end() || alive.count(profile) == 0) return;
      cb = std::move(it->second);
      exits.erase(it);
    }
    cb(f);
  }
};

class FakeEffects : public Effects {
 public:
  explicit FakeEffects(FakeWorld& w) : w_(w) {}
  asio::awaitable<StartOutcome> start(const ledger::ChildSpec& c, ExitCallback on_exit) override {
    const config::Profile& p = *c.profile;
    ++w_.starts;
    w_.events.push_back("start " + p.name);
    w_.started.push_back(p);
    set_alive(p.name, true);
    {
      std::lock_guard lk(w_.mu);
      w_.exits.erase(p.name);  // a crash reported during this start is not the last child's
    }
    if (w_.start_throws) throw std::runtime_error("state file: invalid UTF-8");
    co_await sleep_for(w_.start_hangs ? std::chrono::milliseconds(std::chrono::hours(1)) : w_.start_delay);
    StartOutcome out;
    if (auto failure = next_failure(p.name)) {
      out.failure = *failure;
      set_alive(p.name, false);
      co_return out;
    }
    {
      std::lock_guard lk(w_.mu);
      w_.exits[p.name] = std::move(on_exit);
    }
    StartReport r;
    r.endpoint.port = w_.upstream_port ? w_.upstream_port : static_cast<std::uint16_t>(w_.next_port++);
    r.pid = w_.pid;
    if (w_.report_load_time) r.total_ms = w_.start_delay.count();
    out.report = r;
    co_return out;
  }
  asio::awaitable<StopReport> stop(const std::string& profile) override {
    w_.events.push_back("stop " + profile);
    if (w_.stop_delay.count() > 0) co_await sleep_for(w_.stop_delay);
    set_alive(profile, false);
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
  void set_alive(const std::string& profile, bool yes) {
    std::lock_guard lk(w_.mu);
    if (!yes) {
      w_.alive.erase(profile);
      return;
    }
    w_.alive.insert(profile);
    w_.max_alive = std::max(w_.max_alive, w_.alive.size());
  }
  std::optional<ChildFailure> next_failure(const std::string& profile) {
    if (auto it = w_.always_fail.find(profile); it != w_.always_fail.end()) return it->second;
    auto& fails = w_.start_failures[profile];
    if (fails.empty()) return std::nullopt;
    auto f = fails.front();
    fails.erase(fails.begin());
    return f;
  }

  FakeWorld& w_;
};

}  // namespace kevlaya::test
