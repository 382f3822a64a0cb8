// Shared by `run` and `eval`: load config + pipeline, say which server binaries will be used,
// and run pipeline work under one Supervisor with Ctrl-C handling and a progress display.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "pipeline/executor.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::cli {

struct LoadedPipeline {
  config::Config config;
  config::Pipeline pipeline;
};

// Loads `config_arg` (empty: ./kevlaya.yaml when present, else defaults) and finds the pipeline
// named by `pipeline_arg` (a file path or a pipeline name). Diagnostics go to `err`.
Result<LoadedPipeline> load_pipeline(const std::string& pipeline_arg, const std::string& config_arg,
                                     std::ostream& err);

// The binary each profile used by `stages` will run, resolved like the supervisor does.
void print_binaries(const config::Config& cfg, const std::vector<config::Stage>& stages, std::ostream& out);

// Progress on stderr: one rewritten line on a TTY, else a plain line every few seconds.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::string label);
  void update(const pipeline::RunProgress& p);  // may print
  void note(const std::string& line);            // a line of its own (e.g. a switch)
  void finish();                                 // ends the TTY line
 private:
  std::string label_;
  bool tty_ = false;
  bool line_open_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// One io_context + Supervisor (real processes) for the life of a command.
class Session {
 public:
  // Plans residency for `cfg` (see plan_setup.hpp) and starts nothing yet.
  explicit Session(config::Config cfg);
  ~Session();
  supervisor::Supervisor& sup() { return *sup_; }
  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

  // Called on the first SIGINT/SIGTERM (e.g. Executor::stop); children are then shut down.
  void set_interrupt(std::function<void()> fn) { interrupt_ = std::move(fn); }

  // Runs `body` on this thread, then stops every child. Returns true if a signal interrupted it.
  // A second signal exits at once with 130 (children die with us: PDEATHSIG).
  bool run(std::function<boost::asio::awaitable<void>()> body);

 private:
  boost::asio::awaitable<void> shutdown_once();
  boost::asio::io_context ioc_;
  std::unique_ptr<supervisor::Supervisor> sup_;
  std::function<void()> interrupt_;
  bool shutdown_started_ = false;
  bool shutdown_done_ = false;
};

std::string format_duration(double seconds);  // "4.2 s", "3m05s", "1h02m"

// Sends log lines to stderr (stdout carries results) at `level`.
void use_stderr_logger(const std::string& level);

}  // namespace kevlaya::cli
