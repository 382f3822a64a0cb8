// The real http::PipelineRunner: runs one REST task through a configured pipeline with the
// pipeline executor (task-major, no journal). `serve` constructs it next to its Supervisor.
#pragma once
#include <memory>

#include "config/config.hpp"
#include "http/pipeline_runner.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::cli {

class ConfigPipelineRunner : public http::PipelineRunner {
 public:
  // `sup` must outlive the runner; `cfg`'s pipelines are looked up by name.
  ConfigPipelineRunner(boost::asio::any_io_executor ex, supervisor::Supervisor& sup, config::ConfigPtr cfg);

  // Errors: not_found (unknown pipeline), bad_request (task without input, bad candidates),
  // unavailable (interrupted); otherwise the journal record, whatever its verdict.
  boost::asio::awaitable<Result<nlohmann::json>> run_task(std::string name, nlohmann::json task) override;
  Status check_task(const std::string& name, const nlohmann::json& task) const override;

  // A reloaded configuration for runs that start from now on (runs in progress keep theirs).
  // Call on the runner's executor (serve's one thread).
  void set_config(config::ConfigPtr cfg);

 private:
  boost::asio::any_io_executor ex_;
  supervisor::Supervisor& sup_;
  config::ConfigPtr cfg_;
};

}  // namespace kevlaya::cli
