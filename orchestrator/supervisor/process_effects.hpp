// ProcessEffects: the real Effects. Starts children as processes (Child), allocates ports and
// retries on port_in_use, stops them and waits for GPU memory to come back before the next start.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "supervisor/child.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::supervisor {

class ProcessEffects : public Effects {
 public:
  // Kills leftover children recorded in orch.state_dir by a previous run (checked via /proc).
  ProcessEffects(asio::io_context& ioc, const config::OrchestratorCfg& orch);
  ~ProcessEffects() override;

  asio::awaitable<StartOutcome> start(const config::Profile& p, ExitCallback on_exit) override;
  asio::awaitable<StopReport> stop(const std::string& profile) override;

  int stale_killed() const { return stale_killed_; }  // leftover groups killed at construction

 private:
  asio::awaitable<std::int64_t> wait_for_vram(std::uint64_t baseline_free);
  asio::io_context& ioc_;
  config::OrchestratorCfg orch_;
  std::map<std::string, std::shared_ptr<Child>> children_;  // starting or running, by profile
  std::map<std::string, std::uint64_t> free_before_;        // GPU free bytes before each start
  int stale_killed_ = 0;
};

// Picks a free TCP port on `host` by binding port 0 (the child may still lose a race for it:
// callers retry on port_in_use).
int pick_free_port(const std::string& host);

}  // namespace kevlaya::supervisor
