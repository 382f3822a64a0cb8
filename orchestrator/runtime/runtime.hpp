// The one startup path of every command that runs children (`serve`, `up`, `run`, `eval`):
//   config -> state_dir lock (one instance per state directory) -> residency plan (a refusal
//   stops here) -> effects (reaping children of a dead previous instance) -> supervisor,
// and one signal policy: the first SIGINT/SIGTERM drains (the caller's hook, then every child is
// stopped), a second one exits at once with kExitInterrupted (children die with us: PDEATHSIG).
// cli/ parses arguments and prints; it never builds these pieces itself.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ledger/snapshot.hpp"
#include "runtime/exit_codes.hpp"
#include "runtime/state_lock.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::runtime {

class Runtime {
 public:
  // Builds everything for `cfg`; nothing is spawned yet. Errors (exit kExitFailure): the state
  // directory is held by another instance (the message names its pid), or the plan refuses the
  // configuration. Must be called on the thread that will call run() (PDEATHSIG of the children
  // is tied to the spawning thread).
  static Result<std::unique_ptr<Runtime>> open(config::Config cfg);
  ~Runtime();

  boost::asio::io_context& ioc() { return ioc_; }
  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }
  supervisor::Supervisor& sup() { return *sup_; }
  // The configuration in force and its plan: the startup one, then each reload's (publish).
  const ledger::SnapshotPtr& snapshot() const { return snap_; }
  void publish(ledger::SnapshotPtr s) { snap_ = std::move(s); }  // a reload's (runtime::Reloader)
  int stale_killed() const { return stale_killed_; }  // leftover children of a dead instance

  // First signal: `hook` runs at once (e.g. Executor::stop), then `drain` is awaited (e.g. the
  // door's stop), then every child is stopped. Either may be empty.
  void on_first_signal(std::function<void()> hook, std::function<boost::asio::awaitable<void>()> drain = {});

  // SIGHUP runs `fn` (e.g. a configuration reload) each time; without one SIGHUP is not caught.
  void on_hangup(std::function<void()> fn) {
    hangup_ = std::move(fn);
    hup_.add(SIGHUP);  // caught from now on: one before run() waits for it
  }

  // Runs `body` on this thread (an empty body: until the first signal), then stops every child.
  // Returns true when a signal interrupted it. Exceptions from `body` are bugs and propagate.
  bool run(std::function<boost::asio::awaitable<void>()> body);

  // Completes at the first signal (for a body that runs until stopped, after its own work).
  boost::asio::awaitable<void> until_signal();
  // The first signal came (a body checks it between steps: nothing new starts after it).
  bool interrupted() const { return interrupted_; }

 private:
  Runtime(ledger::SnapshotPtr snap, StateLock lock);
  boost::asio::awaitable<void> shutdown_once();
  boost::asio::awaitable<void> drain_then_stop();

  // One thread runs ioc_ and performs all of its I/O (sockets, pipes, pidfds): the reactor's
  // per-descriptor locks are off (~9 % of the door's CPU per request). Other threads may only post.
  boost::asio::io_context ioc_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  // Caught from open() on: a signal before run() (serve prints "listening on" first) waits for it
  // instead of killing the process with the default action.
  boost::asio::signal_set sigs_{ioc_, SIGINT, SIGTERM};
  boost::asio::signal_set hup_{ioc_};  // SIGHUP, once on_hangup() set a handler
  ledger::SnapshotPtr snap_;  // never null
  StateLock lock_;  // released last: the children are gone by then
  std::unique_ptr<supervisor::Supervisor> sup_;
  int stale_killed_ = 0;
  std::function<void()> hook_;
  std::function<boost::asio::awaitable<void>()> drain_;
  std::function<void()> hangup_;
  boost::asio::steady_timer signalled_{ioc_};  // cancelled at the first signal
  bool interrupted_ = false;
  bool shutdown_started_ = false;
  bool shutdown_done_ = false;
};

}  // namespace kevlaya::runtime
