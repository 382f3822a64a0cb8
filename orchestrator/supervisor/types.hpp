// Plain values shared by Child, Scheduler and Supervisor (no asio, no processes).
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "remote/status.hpp"
#include "supervisor/phase.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {

// Why a child did not start or died; each kind has a hint for the user.
enum class FailureKind {
  none,
  cuda_oom,          // "cudaMalloc failed: out of memory", "failed to allocate ... buffer"
  bad_model,         // "error loading model"
  port_in_use,       // "couldn't bind HTTP server socket"
  binary_not_found,  // exec failed / not on PATH
  startup_timeout,   // not healthy within health.startup_timeout_s
  stalled,           // no log line within health.stall_timeout_s while starting
  crashed,           // killed by a signal (or found gone: connection refused and the pid exited)
  hung,              // ready, but silent on a request and on GET health.path (SIGSTOP, deadlock): killed
  exited,            // exited with a code
  internal,          // the start itself failed (an error of the orchestrator, not of the child)
};
std::string_view to_string(FailureKind k);

struct ChildFailure {
  FailureKind kind = FailureKind::none;
  std::string message;
  std::string hint;
  int exit_code = -1;  // -1 = none / unknown
  int signal = 0;      // 0 = none
  std::vector<std::string> log_tail;  // last lines of the child's output
  // Errc: child_crashed for deaths after ready; the start error otherwise.
  Error to_error(Errc code) const;
};

// Classifies an exit (status + log tail) into a failure with a hint. Pure.
ChildFailure classify_exit(int exit_code, int signal, const std::vector<std::string>& log_tail);

struct StartReport {
  upstream::Endpoint endpoint;
  int pid = 0;
  int attempts = 1;                      // > 1 after port_in_use retries
  std::int64_t spawn_to_listening_ms = 0;  // spawn -> "listening on" line (or first 200 if none)
  std::int64_t detect_ms = 0;              // "listening on" line -> ready seen
  std::int64_t total_ms = 0;               // spawn -> ready
  double prefetch_resident_pct = -1;       // % of the model file in the page cache at spawn (-1 = unknown)
  std::int64_t restore_ms = 0;             // KV slot restore after ready (slot_cache.enabled), in total_ms
  int slots_restored = 0;
};

struct StartOutcome {
  std::optional<StartReport> report;  // set on success
  ChildFailure failure;               // set on failure
  bool ok() const { return report.has_value(); }
};

struct StopReport {
  std::int64_t stop_ms = 0;       // SIGTERM -> reaped
  std::int64_t vram_wait_ms = 0;  // reaped -> GPU memory back (0 without NVIDIA GPU)
  int exit_code = -1;
  int signal = 0;
  bool killed = false;  // SIGKILL was needed after stop.grace_s
  std::int64_t save_ms = 0;  // KV slot save before SIGTERM (slot_cache.enabled), in stop_ms
  int slots_saved = 0;
  std::string stop_command;  // how stop.command ended ("exit 0", "timed out (killed)"); "" = none
};

// One model switch, with the time each phase took.
struct SwitchRecord {
  std::string from;  // empty = nothing was resident
  std::string to;
  std::chrono::system_clock::time_point at;
  std::int64_t drain_ms = 0;
  std::int64_t stop_ms = 0;
  std::int64_t vram_wait_ms = 0;
  std::int64_t spawn_to_listening_ms = 0;
  std::int64_t detect_ms = 0;
  std::int64_t total_ms = 0;
  double prefetch_resident_pct = -1;  // % of `to`'s model file in the page cache at spawn (-1 = unknown)
  std::int64_t save_ms = 0;           // saving `from`'s KV slots (part of stop_ms)
  std::int64_t restore_ms = 0;        // restoring `to`'s KV slots before it was reported ready
  bool ahead = false;  // started on a prediction (scheduling.switch_ahead), before a call named `to`
  std::string reason;  // why `from` made room (kEvict*, scheduler.hpp); empty = nothing was resident
  bool ok = true;
  std::string error;  // start failure message when !ok
  FailureKind failure = FailureKind::none;  // why the start failed (when !ok)
  std::vector<std::string> log_tail;        // the child's last lines (when !ok)
};

// One event of the supervisor's stream (Supervisor::subscribe, GET /events).
struct Event {
  enum class Type { phase, switch_done, unload, reload, remote };
  Type type = Type::phase;
  std::chrono::system_clock::time_point at;
  // phase: `child` (a profile, or a shared-base group's child) went `from` -> `to`; `failure` says
  // why when a failure caused it (a failed start, a crash, the start watchdog).
  std::string child;
  Phase from = Phase::stopped;
  Phase to = Phase::stopped;
  std::optional<ChildFailure> failure;
  std::vector<int> gpus;  // phase: the devices the child is placed on (empty = none known)
  std::optional<double> expected_load_s;  // phase -> starting: the median of its last loads (none before one)
  // switch_done: the completed switch, with its phases (and failure kind and log tail when !ok).
  SwitchRecord record;
  // unload: `child` was stopped for `reason` ("idle", "keep_alive", "admin", "reload"); `stop`
  // says how long the stop took (SIGTERM -> reaped -> VRAM back).
  std::string reason;
  StopReport stop;
  // reload: children whose profile changed (replaced once idle), new and removed profiles.
  std::vector<std::string> changed, added, removed;
  // remote: `child` (a remote profile) became reachable or unreachable (backend: remote).
  std::optional<remote::Health> remote;
};

// How far a starting child has got, read from its log (load_progress.hpp).
struct LoadProgress {
  std::string stage;          // "starting", "loading tensors", "creating context", "warming up", ...
  std::optional<double> pct;  // 0..100 while tensors load (llama.cpp prints one dot per percent)
  std::optional<double> eta_s;  // its expected load less the time it has taken (>= 0; none before one load)
};

struct ProfileStatus {
  std::string name;
  Phase state = Phase::stopped;
  int pid = 0;
  int port = 0;
  int in_flight = 0;
  int queued = 0;
  int restarts_in_window = 0;
  int total_restarts = 0;
  int crashes = 0;
  std::optional<ChildFailure> last_failure;
  int retry_after_s = 0;  // > 0 while failed (cooldown)
  // backend: remote only (no child: pid and port stay 0). state: starting until the first check,
  // then ready (reachable) or failed (unreachable).
  std::optional<remote::Health> remote;
  std::vector<int> gpus;  // devices its child is placed on (ledger/placement); empty = none known
  bool pinned = false;
  // Seconds until an idle unload: counting down while ready and idle, the full idle time while
  // busy; nullopt when not resident or never unloaded (pinned, idle_unload_s 0, keep_alive -1).
  std::optional<double> idle_unload_in_s;
  std::optional<LoadProgress> load_progress;  // while starting, when the effects can tell
};

// One GPU of the machine, as planned (NVML or gpu.devices).
struct DeviceStatus {
  int index = 0;
  std::string name;
  std::int64_t vram_mib = 0;
};

struct Snapshot {
  std::vector<ProfileStatus> profiles;
  std::vector<SwitchRecord> recent_switches;  // oldest first
  std::size_t queued = 0;
  bool shutting_down = false;
  std::vector<DeviceStatus> devices;  // empty when no device list is known
  // The named profile's state, or null.
  const ProfileStatus* find(std::string_view name) const {
    for (const auto& p : profiles)
      if (p.name == name) return &p;
    return nullptr;
  }
};

}  // namespace kevlaya::supervisor
