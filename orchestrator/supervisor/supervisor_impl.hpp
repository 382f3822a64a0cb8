// Internal state of Supervisor (not part of the public API). Everything here is touched only on
// `strand_`.
#pragma once
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <variant>

#include "ledger/children.hpp"
#include "remote/monitor.hpp"
#include "supervisor/events.hpp"
#include "supervisor/scheduler.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::supervisor {

// What a released lease's call left in its child (Lease::note_context); -1 = not reported.
struct Context {
  std::int64_t tokens = -1;
  std::int64_t prefill_us_per_token = -1;
};

// One child, keyed by its name: the plan's ChildSpec it runs and everything the supervisor knows of
// its process.
struct ChildState {
  ledger::ChildPtr spec;  // what it runs; keeps the configuration it came from alive
  const config::Profile& settings() const { return *spec->profile; }
  Phase phase = Phase::stopped;  // changed only through SupervisorImpl::set_phase
  upstream::Endpoint endpoint;
  int pid = 0;
  int in_flight = 0;
  Clock::time_point ready_since{};
  std::optional<Clock::time_point> draining_since;  // while phase == draining (set_phase)
  std::map<std::uint64_t, std::weak_ptr<LeaseShared>> leases;  // held now
  std::uint64_t gen = 0;                 // bumps on every start: stale exit events are ignored
  std::deque<Clock::time_point> failures;  // crashes + failed starts within restart.window_s
  int starts = 0;
  int crashes = 0;
  std::optional<ChildFailure> last_failure;
  bool crashed = false;              // stopping a child that died: `failed` once it is reaped
  bool removed = false;              // its profile left the configuration (reload): stop, never restart
  bool stale = false;                // its profile changed (reload): replace once it is idle
  bool noticed_gone = false;         // check_alive found it dead before its exit was reported
  Clock::time_point failed_until{};  // crash-loop cooldown end (acquire refuses until then)
  Clock::time_point not_before{};    // restart backoff end
  Clock::time_point retry_at() const { return std::max(failed_until, not_before); }  // `failed` until
  Clock::time_point became_ready_at{};
  // Idle unload (supervisor_lifecycle.cpp): idle since (ready, or the last lease released), the
  // last request's keep_alive (nullopt = idle_unload_s; kForever = never), and why it stops.
  Clock::time_point idle_since{};
  std::optional<Clock::duration> keep_alive;
  std::string unload_reason;  // non-empty: the stop in progress is an unload (published when done)
  // Its last successful loads (start to ready), seeded from state_dir: the reload cost and the ETA.
  std::deque<std::int64_t> loads_ms;
  Clock::time_point starting_since{};  // when it last entered `starting`
  std::deque<std::int64_t> contexts;  // tokens the last `parallel` calls left in its slots
  double prefill_s_per_token = 0;     // its last reported prefill speed (0 = none yet)
  static constexpr Clock::duration kForever = Clock::duration::max();
};

// The median of `ps`'s last loads in seconds; none before one load.
std::optional<double> expected_load_s(const ChildState& ps);

struct Waiter {
  std::uint64_t id = 0;
  std::string profile;  // the profile asked for
  config::HealthCfg health;  // its health settings, as admitted (the lease's call_options)
  std::string child;    // the child that serves it (profile name, or shared-base group child)
  Clock::time_point enqueued{};
  Clock::time_point deadline{};
  std::optional<asio::steady_timer> timer;  // made by wait(): most calls are granted at once
  std::optional<Result<Lease>> result;
  // Ends wait() (a result is set, or the waiter left the queue).
  void wake() {
    if (timer) timer->cancel();
  }
};

// What admission decided: an error or a lease now, or the queued waiter.
using Admission = std::variant<Result<Lease>, std::shared_ptr<Waiter>>;

// Who asks: a call (its model feeds the switch-ahead history) or an operator's explicit load
// (ensure_ready), which clears that history so that no guess undoes it.
enum class Asker { call, load };

struct PendingSwitch {
  SwitchRecord rec;
  Clock::time_point started{};
  std::optional<Clock::time_point> drain_start;
};

class SupervisorImpl : public std::enable_shared_from_this<SupervisorImpl> {
 public:
  SupervisorImpl(asio::any_io_executor ex, config::ConfigPtr cfg, std::unique_ptr<Effects> effects,
                 SupervisorOptions opts);

  asio::awaitable<Result<Lease>> acquire(std::string model, std::optional<Clock::time_point> deadline,
                                         std::shared_ptr<upstream::CancelToken> cancel, Asker who = Asker::call);
  // acquire's synchronous part: an error or a lease now, or the queued waiter to wait() on.
  Admission admit(std::string model, std::optional<Clock::time_point> deadline,
                  std::shared_ptr<upstream::CancelToken> cancel, Asker who = Asker::call);
  asio::awaitable<Result<Lease>> wait(std::shared_ptr<Waiter> w, std::shared_ptr<upstream::CancelToken> cancel);
  void abandon(const std::shared_ptr<Waiter>& w);  // the waiter's caller left
  asio::awaitable<Status> unload(std::optional<std::string> model);
  asio::awaitable<ReloadDiff> reload(config::ConfigPtr cfg, SupervisorOptions opts, std::function<void()> switched);
  asio::awaitable<Snapshot> snapshot();
  asio::awaitable<void> shutdown();
  void on_release(const std::string& child, std::uint64_t lease_id, std::int64_t keep_alive_s, Context ctx);
  void start_wanted();
  bool check_alive(const LeaseShared& lease);
  asio::awaitable<bool> check_responsive(std::shared_ptr<LeaseShared> lease);
  // remote_routes.cpp: backend: remote profiles, served without a child or the scheduler.
  void start_remotes();
  Result<Lease> remote_lease(const config::Profile& p);
  void add_remote_status(Snapshot& s) const;
  bool on_strand() const;  // the calling thread is running a handler on strand_

  // Declared before opts_: initialised from the constructor's `opts` (serial_executor) before it moves.
  asio::any_io_executor strand_;
  std::shared_ptr<EventHub> events_ = std::make_shared<EventHub>();

 private:
  // The child serving `profile` now (the profile's name when none: a remote or an unknown one).
  const std::string& child_of(const std::string& profile) const;
  const ledger::ChildSpec* spec_of(const std::string& profile) const;  // nullptr when none
  void reschedule();
  // The scheduler's input now (sched_in_, refilled): valid until the next call.
  const SchedInput& sched_input(Clock::time_point now);
  // Fails a queued request that cannot wait for a protected child (a refuse action): 503 + Retry-After.
  void refuse(std::uint64_t waiter_id, const Action& a);
  bool ram_short(const SchedInput& in) const;  // the oldest model waiting to start lacks host RAM
  void apply(const Action& a, Clock::time_point now);
  void release_to(std::uint64_t waiter_id, ChildState& ps, Clock::time_point now);
  asio::awaitable<void> do_start(std::string name, std::uint64_t gen);
  asio::awaitable<StartOutcome> start_watched(const std::string& name, std::uint64_t gen);
  asio::awaitable<void> do_stop(std::string name);
  void on_child_exit(const std::string& name, std::uint64_t gen, ChildFailure f);
  void on_crash(const std::string& name, ChildState& ps, ChildFailure f);
  void set_phase(const std::string& name, ChildState& ps, Phase to, std::optional<ChildFailure> why = {});
  std::optional<Clock::time_point> settle_failed(Clock::time_point now);
  void note_failure(ChildState& ps, Clock::time_point now);
  void fail_queued(const std::string& profile, const Error& e);
  void cut_leases(ChildState& ps, const Error& e);
  int switch_key(const std::string& child) const;
  PendingSwitch* pending_switch(const std::string& child);  // nullptr when none on its device
  // The switch in progress on `child`'s device, begun now (from `from`) when there is none.
  PendingSwitch& switch_of(const std::string& child, const std::string& from, Clock::time_point now);
  void finish_switch(const std::string& to, const StartOutcome& out, Clock::time_point now);
  void notify_watchers();
  asio::awaitable<void> wait_change();
  Effects::ExitCallback exit_callback(const std::string& name, std::uint64_t gen);
  // supervisor_lifecycle.cpp: idle unload, keep_alive, pins and preloads.
  std::optional<Clock::duration> idle_limit(const ChildState& ps) const;
  void note_keep_alive(ChildState& ps, std::int64_t keep_alive_s);
  std::vector<std::string> wanted() const;
  void publish_unload(const std::string& name, ChildState& ps, const StopReport& rep);
  void fill_lifecycle(ProfileStatus& st, const ChildState& ps, Clock::time_point now);
  void seed_loads();  // each child's stored loads (state_dir), where it has none in memory
  void store_load(const ledger::ChildSpec& child, std::int64_t ms);  // a successful load, into state_dir
  void retire(const std::string& name, ChildState& ps, const char* reason);
  void requeue();
  void note_call(const std::string& child, Asker who);  // admission.cpp: the switch-ahead history

  config::ConfigPtr cfg_;  // in force; children of an older one hold theirs (ChildState::profile)
  std::unique_ptr<Effects> effects_;
  mutable std::string ram_warned_;  // the model ram_short last warned about (one line per episode)
  SupervisorOptions opts_;
  std::map<std::string, ChildState> children_;  // by child name
  std::deque<std::shared_ptr<Waiter>> queue_;
  std::vector<std::string> recent_;  // child names of the last calls that came alone (switch ahead), oldest first
  asio::steady_timer wake_;
  std::optional<Clock::time_point> wake_armed_;  // when wake_ fires (none: not waiting)
  SchedInput sched_in_;  // sched_input()'s value, refilled for each decision
  std::list<asio::steady_timer*> watchers_;
  // Switches in progress, one per device (the child's first GPU; -1 = no placement known): the
  // GPUs of a multi-device machine switch at the same time, each with its own record.
  std::map<int, PendingSwitch> switch_;
  std::deque<SwitchRecord> switches_;
  std::uint64_t next_id_ = 1;
  bool shutting_down_ = false;
  int starts_in_flight_ = 0;  // starts decided whose do_start has not returned: shutdown waits for them
  std::vector<std::string> preload_;  // child names to start once (start_wanted), then cleared
  std::unique_ptr<remote::Monitor> remotes_;  // health of the remote profiles; on strand_
};

}  // namespace kevlaya::supervisor
