// Supervisor: the one way to reach a model. Owns the children (through an Effects interface) and the
// pure Scheduler on its own strand; hands out move-only Leases.
//
//   auto lease = co_await sup.acquire("kev", deadline);   // may queue; may trigger a switch
//   if (!lease) -> lease.error() (Errc::timeout, profile_failed, not_found, unavailable, ...)
//   ... upstream::fetch(ex, lease->endpoint(), req) ...
//   if (lease->crashed()) -> lease->crash_error()          // the child died under this lease
//   lease goes out of scope -> in-flight count drops -> the scheduler may switch
//
// Thread-safety: every public method may be called from any thread/executor; they post to the
// supervisor's strand. Leases may be destroyed anywhere (release is posted).
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "supervisor/types.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

class SupervisorImpl;

// Shared between a Lease and the supervisor; the crash fields are written on the supervisor strand
// before `crashed` is set (release/acquire), so any thread may read them after seeing crashed().
struct LeaseShared {
  std::uint64_t id = 0;
  std::string profile;
  std::string child;  // the child serving it: the profile, or a shared-base group's child
  upstream::Endpoint endpoint;
  std::atomic<bool> crashed{false};
  Error crash;  // valid once crashed == true
  std::weak_ptr<SupervisorImpl> owner;
};

// Permission to send requests to one ready child. Move-only; releases on destruction.
class Lease {
 public:
  Lease() = default;
  Lease(std::shared_ptr<LeaseShared> s, std::int64_t queue_ms, std::int64_t switch_ms,
        std::vector<std::pair<std::string, double>> lora = {});
  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&& o) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  const upstream::Endpoint& endpoint() const { return s_->endpoint; }  // where to send requests
  const std::string& profile() const { return s_->profile; }           // profile name (not alias)
  std::int64_t queue_ms() const { return queue_ms_; }   // time spent waiting in the queue
  std::int64_t switch_ms() const { return switch_ms_; }  // part of queue_ms spent on a switch (0 = none)
  // Shared-base mode: (adapter name, scale) per adapter id of the child, to send as the request's
  // `lora` field [{"id": i, "scale": s}]; empty when the child serves one profile.
  const std::vector<std::pair<std::string, double>>& lora_scales() const { return lora_; }
  bool crashed() const;       // the child exited unexpectedly while this lease was held
  Error crash_error() const;  // Errc::child_crashed with exit code/signal and last log lines
  void release();             // gives the slot back now (idempotent)
  bool valid() const { return s_ != nullptr; }

 private:
  std::shared_ptr<LeaseShared> s_;
  std::int64_t queue_ms_ = 0;
  std::int64_t switch_ms_ = 0;
  std::vector<std::pair<std::string, double>> lora_;
};

// What Supervisor needs from the outside world: start a child until healthy, stop it.
// ProcessEffects (process_effects.hpp) is the real one; tests use a fake.
class Effects {
 public:
  using ExitCallback = std::function<void(ChildFailure)>;
  virtual ~Effects() = default;
  // Spawns the profile's child and waits until it is healthy (or fails, classified). `on_exit` is
  // called once (from any executor) if the child later exits without being asked to.
  virtual asio::awaitable<StartOutcome> start(const config::Profile& p, ExitCallback on_exit) = 0;
  // Stops the child (SIGTERM group, grace, SIGKILL, reap, VRAM wait). Never fails; no-op if absent.
  virtual asio::awaitable<StopReport> stop(const std::string& profile) = 0;
  // Hint: `profile` is likely to be started soon (e.g. the oldest queued request's model); the
  // real effects prefetch its files into the page cache. Must not block. Default: ignored.
  virtual void likely_next(const std::string& /*profile*/) {}
};

// Profiles served by ONE child started with every adapter of the group at scale 0; a member's
// lease carries its scales (Lease::lora_scales), so moving between members needs no process work.
struct SharedBase {
  std::vector<std::string> members;                   // profile names; same model and flags
  std::vector<config::LoraSpec> adapters;             // loaded by the child; id = index
  std::map<std::string, std::vector<double>> scales;  // member -> scale per adapter id
};

// Name of the child that serves a shared-base group ("kev+laya"): switch records and logs use it.
std::string shared_child_name(const SharedBase& g);

struct SupervisorOptions {
  // Sets of profile names that may be alive at the same time. Empty = one at a time. A member of
  // a shared-base group stands for the group's child.
  std::vector<std::vector<std::string>> allowed_sets;
  std::vector<SharedBase> shared_bases;
  // Called on the supervisor strand after each successful start, with the child's profile (for
  // a group: the synthesized one, named by shared_child_name). E.g. records calibration.
  std::function<void(const config::Profile& child, const StartReport& report)> on_ready;
  std::size_t switch_history = 100;  // ring of recent switches kept for status/metrics
};

class Supervisor {
 public:
  // `effects` is owned; `cfg` is copied (profiles + orchestrator settings).
  Supervisor(asio::any_io_executor ex, config::Config cfg, std::unique_ptr<Effects> effects,
             SupervisorOptions opts = {});
  ~Supervisor();  // does not wait: call shutdown() first for a graceful stop
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Waits (queued, FIFO per model) until a ready child of `model_or_alias` has a free slot.
  // Errors: not_found (unknown model), timeout (deadline), profile_failed (cooldown, retry_after_s),
  // unavailable (shutting down), or the start failure (classified, with hint and log tail).
  asio::awaitable<Result<Lease>> acquire(std::string model_or_alias, Clock::time_point deadline);

  // Admin load: makes `model_or_alias` resident (switching if needed) without holding a slot.
  asio::awaitable<Status> ensure_ready(std::string model_or_alias, Clock::time_point deadline);

  // Stops every child after draining (bounded by drain_timeout); queued requests stay queued.
  asio::awaitable<Status> unload();

  // Consistent copy of per-profile state, failures, restart counts and recent switches.
  asio::awaitable<Snapshot> snapshot();

  // Graceful stop of all children; queued requests fail with unavailable; later acquire() fails.
  asio::awaitable<void> shutdown();

  // Called for every completed switch (on the supervisor strand); e.g. the CLI prints it.
  void on_switch(std::function<void(const SwitchRecord&)> cb);

 private:
  std::shared_ptr<SupervisorImpl> impl_;
};

}  // namespace kevlaya::supervisor
