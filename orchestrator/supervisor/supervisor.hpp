// Supervisor: the one way to reach a model. Owns the children (through an Effects interface) and the
// pure Scheduler on its own strand; hands out move-only Leases.
//
//   auto lease = co_await sup.acquire("kev", deadline);   // may queue; may trigger a switch
//   if (!lease) -> lease.error() (Errc::timeout, profile_failed, not_found, unavailable, ...)
//   ... upstream::fetch(ex, lease->endpoint(), req) ...
//   if (lease->crashed()) -> lease->crash_error()          // the child died under this lease
//   connection refused/reset -> co_await sup.check_alive(*lease) // a dead child is noticed at once
//   lease goes out of scope -> in-flight count drops -> the scheduler may switch
//
//   auto sub = sup.subscribe([](const Event& e) { ... });  // every phase change and switch record
//
// Thread-safety: every public method may be called from any thread/executor; they post to the
// supervisor's strand (acquire admits at once a caller already on it: strand()). Leases may be
// destroyed anywhere (release is posted).
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <variant>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ledger/plan.hpp"
#include "supervisor/types.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

class SupervisorImpl;
struct Waiter;

// Shared between a Lease and the supervisor; the crash fields are written on the supervisor strand
// before `crashed` is set (release/acquire), so any thread may read them after seeing crashed().
struct LeaseShared {
  std::uint64_t id = 0;
  std::string profile;
  std::string child;  // the child serving it: the profile, or a shared-base group's child
  upstream::Endpoint endpoint;
  std::string upstream_model;  // the body's `model` upstream; "" = as the caller wrote it
  bool remote = false;         // backend: remote (no child; the monitor is told of broken calls)
  config::HealthCfg health;    // the profile's (Supervisor::call_options)
  std::atomic<bool> crashed{false};
  // The request's keep_alive in seconds (Lease::set_keep_alive); kNoKeepAlive = none given.
  static constexpr std::int64_t kNoKeepAlive = INT64_MIN;
  std::atomic<std::int64_t> keep_alive_s{kNoKeepAlive};
  // What the call left in the child's slot (Lease::note_context): its tokens and the child's
  // prefill time per token in microseconds; -1 = not reported.
  std::atomic<std::int64_t> context_tokens{-1};
  std::atomic<std::int64_t> prefill_us_per_token{-1};
  Error crash;  // valid once crashed == true
  std::weak_ptr<SupervisorImpl> owner;
};

// Permission to send requests to one ready child. Move-only; releases on destruction.
class Lease {
 public:
  Lease() = default;
  Lease(std::shared_ptr<LeaseShared> s, std::int64_t queue_ms, std::int64_t switch_ms,
        std::vector<ledger::LoraScale> lora = {});
  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&& o) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  const upstream::Endpoint& endpoint() const { return s_->endpoint; }  // where to send requests
  const std::string& profile() const { return s_->profile; }           // profile name (not alias)
  // The name to send as the body's `model`: the profile's (llama-server), the remote's own name
  // for it (remote), or "" = the caller's word unchanged (command: e.g. vLLM picks a LoRA by it).
  const std::string& upstream_model() const { return s_->upstream_model; }
  bool remote() const { return s_->remote; }  // served by a remote server (backend: remote)
  std::int64_t queue_ms() const { return queue_ms_; }   // time spent waiting in the queue
  std::int64_t switch_ms() const { return switch_ms_; }  // part of queue_ms spent on a switch (0 = none)
  // Shared-base mode: the scale of every adapter id of the child, sent as the request's `lora`
  // field (set_child_fields); empty when the child serves one profile.
  const std::vector<ledger::LoraScale>& lora_scales() const { return lora_; }
  bool crashed() const;       // the child exited unexpectedly while this lease was held
  Error crash_error() const;  // Errc::child_crashed with exit code/signal and last log lines
  void release();             // gives the slot back now (idempotent)
  // Ollama-style keep_alive of this request: after it, the child stays loaded `seconds` while
  // idle (0 = unload right after, negative = as long as keep_alive_max_s allows). Applied on
  // release; a lease released without one restores the profile's idle_unload_s.
  void set_keep_alive(std::int64_t seconds);
  // The tokens this call left in its slot and the child's prefill speed (llama-server's timings):
  // what the child's slots would cost to prefill again, part of its reload cost (docs/supervisor.md,
  // "Cost-aware eviction").
  void note_context(std::int64_t tokens, double prefill_tokens_per_s) const;
  bool valid() const { return s_ != nullptr; }
  const std::shared_ptr<LeaseShared>& shared() const { return s_; }  // for Supervisor::check_alive

 private:
  std::shared_ptr<LeaseShared> s_;
  std::int64_t queue_ms_ = 0;
  std::int64_t switch_ms_ = 0;
  std::vector<ledger::LoraScale> lora_;
};

// What Supervisor needs from the outside world: start a child until healthy, stop it.
// ProcessEffects (process_effects.hpp) is the real one; tests use a fake.
class Effects {
 public:
  using ExitCallback = std::function<void(ChildFailure)>;
  virtual ~Effects() = default;
  // Spawns the child as `c` says (a bound ChildSpec: c.profile is what it runs) and waits until it
  // is healthy (or fails, classified). `on_exit` is called once (from any executor) if the child
  // later exits without being asked to.
  virtual asio::awaitable<StartOutcome> start(const ledger::ChildSpec& c, ExitCallback on_exit) = 0;
  // Stops the child (SIGTERM group, grace, SIGKILL, reap, VRAM wait). Never fails; no-op if absent.
  virtual asio::awaitable<StopReport> stop(const std::string& profile) = 0;
  // The configuration now in force, at construction and after each reload. Default: ignored.
  virtual void configure(config::ConfigPtr /*cfg*/) {}
  // Hint: `profile` is likely to be started soon (e.g. the oldest queued request's model); the
  // real effects prefetch its files into the page cache. Must not block. Default: ignored.
  virtual void likely_next(const std::string& /*profile*/) {}
  // True when the profile's child process has exited (checked now, by its pid; not yet reported
  // through on_exit perhaps). Must not block. Default: false (unknown).
  virtual bool exited(const std::string& /*profile*/) { return false; }
  // Liveness of a ready child: true when it answers GET health.path (any HTTP status) within
  // health.probe_timeout_ms. Default: true (unknown).
  virtual asio::awaitable<bool> responsive(const std::string& /*profile*/) { co_return true; }
  // SIGKILLs the profile's child now (its process group; works on a stopped process). stop()
  // still reaps it. Must not block. Default: nothing.
  virtual void kill(const std::string& /*profile*/) {}
  // How far the profile's starting child has got (read from its log). Must not block for long.
  // Default: unknown.
  virtual std::optional<LoadProgress> progress(const std::string& /*profile*/) { return std::nullopt; }
  // Host memory available now, bytes (MemAvailable, the cgroup limit included). Read only when a
  // start waits beside other children; must not block for long. Default: unknown (never short).
  virtual std::optional<std::uint64_t> host_ram_available() { return std::nullopt; }
};

class EventHub;

// A subscription to the supervisor's events; unsubscribes when destroyed (or reset()). Once
// reset() returns, the callback is not running and will not run again.
class Subscription {
 public:
  struct Sub;
  Subscription() = default;
  Subscription(std::weak_ptr<EventHub> hub, std::shared_ptr<Sub> sub);
  Subscription(Subscription&&) noexcept = default;
  Subscription& operator=(Subscription&& o) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription();
  void reset();  // unsubscribes (idempotent)

 private:
  std::weak_ptr<EventHub> hub_;
  std::shared_ptr<Sub> sub_;
};

struct SupervisorOptions {
  // Sets of child names that may be alive at the same time (a profile's, or a shared base's
  // ChildSpec::name). Empty = one at a time.
  std::vector<std::vector<std::string>> allowed_sets;
  // The plan's children (ledger::bind_children runs them; a spawning profile in none runs alone,
  // unpriced). A shared one runs with every adapter at scale 0 and a member's lease carries its
  // scales (Lease::lora_scales), so moving between members needs no process work. Each child's
  // host RAM figure (host_beside with `devices`, else host_alone; 0 = unknown): when it must start
  // while others are alive and available RAM (Effects::host_ram_available) is under it plus
  // ledger::kRamReserveMiB, the supervisor runs one child at a time until it has started: the
  // plan's co-resident sets were priced at startup, and other programs may have taken memory since.
  std::vector<ledger::ChildSpec> children;
  // Called on the supervisor strand after each successful start, with the child (bound). E.g.
  // records calibration. (Everything else that follows the supervisor subscribes to its events.)
  std::function<void(const ledger::ChildSpec& child, const StartReport& report)> on_ready;
  std::size_t switch_history = 100;  // ring of recent switches kept for status/metrics
  std::vector<DeviceStatus> devices;  // the machine's GPUs, for status (placement is on each Profile)
  // The executor given runs one handler at a time already (an io_context run by one thread, as
  // the runtime's is): the supervisor uses it as its strand instead of wrapping it in one. A strand
  // inside an any_io_executor is a heap object, so every async operation's work guard allocated.
  bool serial_executor = false;
};

// What Supervisor::reload changed, by profile name (config order).
struct ReloadDiff {
  std::vector<std::string> changed, added, removed, unchanged;
};

class Supervisor {
 public:
  // `effects` is owned; `cfg` is shared (a snapshot's, config::ConfigPtr).
  Supervisor(asio::any_io_executor ex, config::ConfigPtr cfg, std::unique_ptr<Effects> effects,
             SupervisorOptions opts = {});
  ~Supervisor();  // does not wait: call shutdown() first for a graceful stop
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Waits (queued, FIFO per model) until a ready child of `model_or_alias` has a free slot. This is
  // the one admission point: queue.max_depth bounds the queue, and the wait ends at `deadline`
  // (default: now + queue.max_wait_s). Errors: not_found (unknown model), queue_full, timeout,
  // profile_failed (cooldown, retry_after_s), unavailable (shutting down, or `cancel` fired: the
  // waiter leaves the queue at once, so a client that left causes no load), or the start failure
  // (classified, with hint and log tail).
  asio::awaitable<Result<Lease>> acquire(std::string model_or_alias,
                                         std::optional<Clock::time_point> deadline = std::nullopt,
                                         std::shared_ptr<upstream::CancelToken> cancel = nullptr);

  // A queued request (admit_now): its place in the queue until wait() ends.
  struct Ticket {
    std::shared_ptr<Waiter> waiter;
  };
  // acquire()'s admission without its wait, for a caller running on strand() (otherwise nullopt):
  // a lease or an error now, or the ticket of a request queued for a slot (wait() on it), so a
  // caller that does something while it waits (the door's keep-alives) pays for that only then.
  std::optional<std::variant<Result<Lease>, Ticket>> admit_now(std::string model_or_alias,
                                                               std::shared_ptr<upstream::CancelToken> cancel);
  // Waits on a queued request (admit_now) as acquire() does: until its grant, deadline or cancel.
  asio::awaitable<Result<Lease>> wait(Ticket t, std::shared_ptr<upstream::CancelToken> cancel);

  // The strand the supervisor's state lives on (the executor itself with serial_executor). A caller
  // running on it (the HTTP door) is admitted without a hop: acquire() grants a free slot synchronously.
  const asio::any_io_executor& strand() const;

  // Admin load: makes `model_or_alias` resident (switching if needed) without holding a slot.
  asio::awaitable<Status> ensure_ready(std::string model_or_alias,
                                       std::optional<Clock::time_point> deadline = std::nullopt);

  // Stops every child after draining (bounded by drain_timeout); queued requests stay queued.
  // With `model`: that one only. Pinned children are kept (naming one is a bad_request error);
  // each stop is published as an `unload` event with reason "admin".
  asio::awaitable<Status> unload(std::optional<std::string> model = std::nullopt);

  // Starts the configured preload profiles and the pinned ones (once the door is up); returns at
  // once. Preloads that do not fit beside what is alive are skipped (logged).
  void start_wanted();

  // Consistent copy of per-profile state, failures, restart counts and recent switches.
  asio::awaitable<Snapshot> snapshot();

  // Graceful stop of all children; queued requests fail with unavailable; later acquire() fails.
  asio::awaitable<void> shutdown();

  // A lease's child refused or reset a connection: if its process has exited, the child is marked
  // crashed now (a remote lease: the remote is checked again at once, and false is returned) (its leases cut, queued requests wait for the restart). True when the lease is
  // crashed afterwards (then crash_error() says why). A child found alive is checked again for up
  // to 0.5 s (an exit can be reported a moment after the reset it caused).
  asio::awaitable<bool> check_alive(const Lease& lease);

  // A lease's child went silent (no byte for health.hung_check_s, or a timeout): its health is
  // probed (health.probe_timeout_ms); a child that does not answer is marked failed (kind `hung`),
  // SIGKILLed and restarted with backoff, its leases cut and queued calls kept for the new one.
  // True when the lease is crashed afterwards (crash_error() says why). Remote leases: false.
  asio::awaitable<bool> check_responsive(const Lease& lease);
  // check_responsive as an upstream::StreamOptions::still_alive callback (true = keep waiting).
  std::function<asio::awaitable<bool>()> liveness_probe(const Lease& lease);
  // How a call through `lease` is bounded (docs/reliability.md#liveness), for the door's calls and
  // the pipelines' alike: the whole exchange within `deadline`; by the lease's profile, the head
  // within health.first_byte_timeout_s, no gap over chunk_timeout_s, and a liveness probe after
  // each hung_check_s of silence.
  upstream::StreamOptions call_options(const Lease& lease, std::chrono::milliseconds deadline);

  // Applies a new configuration (docs/lifecycle.md): unchanged children keep running untouched;
  // changed ones are drained (in-flight requests finish) and restarted with the new profile when
  // next needed; removed ones are drained and stopped, and requests queued for them fail with
  // not_found; new ones become routable. A child keeps the version it runs alive until it follows
  // the new one (unchanged) or stops; the rest of the old version is dropped now. Publishes a `reload` event. `switched` runs on the
  // strand in the turn the new version takes effect, before any request is admitted against it:
  // a front door switches its own version there, so both resolve a model in the same one.
  asio::awaitable<ReloadDiff> reload(config::ConfigPtr cfg, SupervisorOptions opts, std::function<void()> switched = {});

  // Every phase change and every completed switch, to any number of subscribers. `fn` runs on the
  // supervisor's strand, in order, and must not block (post to your own executor). Thread-safe.
  Subscription subscribe(std::function<void(const Event&)> fn);

 private:
  std::shared_ptr<SupervisorImpl> impl_;
};

}  // namespace kevlaya::supervisor
