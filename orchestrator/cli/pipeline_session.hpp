// Shared by `run` and `eval`: load config + pipeline, say which server binaries will be used, and
// a progress display. The supervisor and signal handling come from runtime::Runtime.
#pragma once
#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "pipeline/executor.hpp"

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

std::string format_duration(double seconds);  // "4.2 s", "3m05s", "1h02m"

// Sends log lines to stderr (stdout carries results) at `level`.
void use_stderr_logger(const std::string& level);

}  // namespace kevlaya::cli
