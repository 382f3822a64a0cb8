// Hot reload (docs/lifecycle.md): re-reads every configuration file and applies the result to the
// supervisor (unchanged children keep running), then to whoever else follows the configuration
// (the door's routes and keys, the pipeline runner) through `applied`. One path for SIGHUP,
// POST /admin/reload and `serve --watch-config`. A configuration that does not validate changes
// nothing: its errors come back as "file:line:col: error: ..." lines (and are logged).
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ledger/snapshot.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::runtime {

class Runtime;

struct ReloadReport {
  bool ok = false;
  // A model file is still being written (a copy, a download) and this rescan could not use it:
  // nothing changed, and the reload runs again by itself shortly (errors[0] says which file).
  bool deferred = false;
  std::vector<std::string> errors;         // why nothing changed
  supervisor::ReloadDiff diff;             // what changed (when ok)
  std::vector<std::string> needs_restart;  // settings that keep their running value
};

class Reloader {
 public:
  // `source`: kevlaya.yaml as given to serve (empty = defaults in the current directory) and any
  // --models-dir (each reload rescans it);
  // `overrides`: command-line settings applied to every version (e.g. --host/--port);
  // `applied`: called with each new snapshot in the supervisor's reload turn, on its strand, after
  // the runtime published it (Runtime::snapshot); whoever follows it keeps its own pointer.
  Reloader(Runtime& rt, config::Source source, std::function<void(config::Config&)> overrides,
           std::function<void(const ledger::SnapshotPtr&)> applied);
  ~Reloader();

  // Reloads now (one at a time: a second call waits for the first). Never throws for bad input.
  // A rescan that meets a model file still being written (modified under kSettle ago, and left
  // out or unreadable) applies nothing and is retried after kRetryAfter, up to kMaxRetries times
  // in a row; then it is applied as it reads (the file noted as not served).
  boost::asio::awaitable<ReloadReport> reload();

  static constexpr std::chrono::seconds kSettle{3};
  static constexpr std::chrono::seconds kRetryAfter{2};
  static constexpr int kMaxRetries = 60;

  // Polls the configuration files' modification times every `interval` and reloads on a change
  // (serve --watch-config), against the files as they are when it is called. Runs until the
  // runtime's io_context stops.
  void watch(std::chrono::milliseconds interval);

 private:
  void schedule_retry();

  struct Shared;
  Runtime& rt_;
  config::Source source_;  // reloaded as given: a --models-dir stays
  std::function<void(config::Config&)> overrides_;
  std::function<void(const ledger::SnapshotPtr&)> applied_;
  std::shared_ptr<Shared> shared_;
};

// What a reload cannot change in a running process (one table in reload.cpp: listen, folders,
// prefetch, preload, tools, activity, capture): "setting: old -> new (needs a restart)" each. Pure.
std::vector<std::string> needs_restart(const config::OrchestratorCfg& running, const config::OrchestratorCfg& next);

// A cheap fingerprint of the configuration files (paths, sizes, modification times) of `file`
// and the profile, pipeline and models_dir folders of `orch`: it changes when any of them is edited.
std::string config_files_stamp(const std::filesystem::path& file, const config::OrchestratorCfg& orch);

}  // namespace kevlaya::runtime
