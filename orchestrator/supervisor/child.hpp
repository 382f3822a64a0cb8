// Child: one llama-server (or compatible) process. Spawns it in its own process group, reads its
// output line by line into a rotating log file and an in-memory tail, gates readiness on
// GET health.path, stops it (SIGTERM group, grace, SIGKILL group, reap).
//
// It keeps process facts only (pid, pipes, exit status, whether it became healthy); the child's
// Phase has one writer, the supervisor, which hears of a start's outcome and of an unexpected exit.
//
// A Child is single-use: one spawn, one exit. ProcessEffects makes a new one per start.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "supervisor/child_log.hpp"
#include "supervisor/types.hpp"

namespace kevlaya::supervisor {

namespace asio = boost::asio;

struct ChildOptions {
  config::Profile profile;
  std::string host = "127.0.0.1";
  int port = 0;                    // the port passed to the child (chosen by the caller)
  std::filesystem::path log_dir;   // empty = no log file
  std::filesystem::path state_dir; // empty = no state file
  std::filesystem::path slot_save_path;  // empty = no --slot-save-path
  std::string api_key;             // the child's --api-key for this start; empty = none
  std::size_t tail_lines = 200;
};

class Child {
 public:
  // Creates an unstarted child. Spawning happens on the io_context's thread (PDEATHSIG is tied to
  // the spawning thread, so keep that thread alive as long as the child).
  static std::shared_ptr<Child> create(asio::io_context& ioc, ChildOptions opts);
  ~Child();  // safety net: SIGKILLs a process that was never stopped (reaped by its watcher)

  // Spawns and waits until /health answers 200, or fails (classified, child killed and reaped).
  asio::awaitable<StartOutcome> start();
  // SIGTERM to the group, SIGKILL after profile.stop.grace_s, always reaps. Idempotent.
  asio::awaitable<StopReport> stop();
  // SIGKILL to the process group now (a hung child: a stopped process dies too); stop() reaps.
  void kill_now();
  // Called once, on the child's strand, when a ready child exits without stop().
  void on_unexpected_exit(std::function<void(ChildFailure)> cb);

  int pid() const;  // 0 before spawn
  // True when the process has exited, reported or not (checked now by its pid). Any thread.
  bool exited() const;
  const ChildOptions& options() const;

  class Impl;
  explicit Child(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kevlaya::supervisor
