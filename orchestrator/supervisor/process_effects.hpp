// ProcessEffects: the real Effects. Starts children as processes (Child), allocates ports and
// retries on port_in_use, stops them and waits for GPU memory to come back before the next start.
// Warm switches (docs/warm.md): while a child serves, the predicted next profile's files are read
// into the page cache in the background (orch.prefetch); with a profile's slot_cache enabled, its KV
// slots are saved before the child stops and restored after the next start, before it counts as ready.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "supervisor/child.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::warm {
class Prefetcher;
}

namespace kevlaya::supervisor {

class ProcessEffects : public Effects {
 public:
  // Kills leftover children recorded in cfg.orch.state_dir by a previous run (checked via /proc),
  // and predicts the next profile from the pipelines (the stage after the one now serving).
  // Folders and prefetch settings are kept as `cfg` has them (a reload cannot change them).
  ProcessEffects(asio::io_context& ioc, config::ConfigPtr cfg);
  ~ProcessEffects() override;

  asio::awaitable<StartOutcome> start(const ledger::ChildSpec& c, ExitCallback on_exit) override;
  asio::awaitable<StopReport> stop(const std::string& profile) override;
  // Prediction and prefetch follow `cfg` from now on (its model paths, its pipelines).
  void configure(config::ConfigPtr cfg) override { cfg_ = std::move(cfg); }
  // Prefetches `profile`'s files unless it is alive or already being prefetched; never blocks.
  void likely_next(const std::string& profile) override;
  std::optional<std::uint64_t> host_ram_available() override;  // warm::mem_available_mib, live
  // True when the profile's child process has exited (by its pid), reported yet or not.
  bool exited(const std::string& profile) override;
  // GET health.path of the ready child answered (any status) within health.probe_timeout_ms.
  asio::awaitable<bool> responsive(const std::string& profile) override;
  void kill(const std::string& profile) override;  // SIGKILL to the child's group now
  // A starting child's stage and percent, from what it logged since its spawn (load_progress.hpp).
  std::optional<LoadProgress> progress(const std::string& profile) override;

  int stale_killed() const { return stale_killed_; }  // leftover groups killed at construction
  // Blocks until the background prefetch posted so far has ended (tests and benchmarks only).
  void wait_prefetch_idle();

  // Where a profile's KV slots are saved (slot_cache.enabled, llama-server backend, state_dir set).
  struct SlotPlan {
    std::filesystem::path dir;  // --slot-save-path
    std::string key;            // model/ctx/cache types/LoRA key, part of every file name
    int slots = 1;
    std::int64_t max_bytes = 0;
  };

 private:
  // (device, free bytes before the start) of each GPU the child was placed on.
  using VramBaseline = std::vector<std::pair<unsigned, std::uint64_t>>;
  // Everything known of one child process, from its start until its stop returns: the one record
  // (the phase is the supervisor's; docs/supervisor.md, "Who owns what").
  struct Running {
    std::shared_ptr<Child> child;               // the process
    std::optional<upstream::Endpoint> ready;     // where it serves, once healthy
    std::optional<SlotPlan> slots;              // slot_cache of this start
    VramBaseline free_before;                   // GPU free bytes before its spawn
    std::uintmax_t log_offset = 0;              // size of its log at its spawn
  };
  asio::awaitable<std::int64_t> wait_for_vram(VramBaseline baseline);
  asio::awaitable<StartOutcome> spawn_child(const config::Profile& p, Running& run, ExitCallback on_exit);
  asio::awaitable<void> restore_slots(const SlotPlan& plan, const upstream::Endpoint& ep, StartReport& rep);
  asio::awaitable<void> save_slots(const SlotPlan& plan, const upstream::Endpoint& ep, StopReport& rep);
  void prefetch_after_start(const std::string& started);
  void prefetch(const config::Profile& p);
  std::uintmax_t log_size(const std::string& profile) const;
  // The record of `profile`'s child while its process is wanted (starting or running); null otherwise.
  Running* running(const std::string& profile);

  asio::io_context& ioc_;
  config::OrchestratorCfg orch_;
  config::ConfigPtr cfg_;                                    // in force (configure); never null
  std::map<std::string, std::shared_ptr<Running>> running_;  // by child name; shared: a start may outlive its entry
  std::unique_ptr<warm::Prefetcher> prefetcher_;             // null when prefetch is disabled
  std::string prefetching_;                                  // profile last handed to the prefetcher
  std::string last_started_;
  int stale_killed_ = 0;
};

// The slot plan of `p` under `state_dir`, or nullopt (disabled, not llama-server, no state_dir, or
// the model cannot be fingerprinted).
std::optional<ProcessEffects::SlotPlan> slot_plan(const config::Profile& p, const std::filesystem::path& state_dir);

// Picks a free TCP port on `host` by binding port 0 (the child may still lose a race for it:
// callers retry on port_in_use).
int pick_free_port(const std::string& host);

}  // namespace kevlaya::supervisor
