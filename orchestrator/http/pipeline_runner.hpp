// What the REST door needs from the pipeline engine: run one task of a named pipeline and return
// the record the CLI journals. The CLI wires the real runner; tests use a fake.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"

namespace kevlaya::http {

class PipelineRunner {
 public:
  virtual ~PipelineRunner() = default;
  // Runs one task ({"input":..., "candidates":...}) through pipeline `name` to its verdict.
  // The record is the journal line (its "verdict" field feeds the metrics). The door calls this
  // for one task at a time, on its own executor.
  virtual boost::asio::awaitable<Result<nlohmann::json>> run_task(std::string name,
                                                                  nlohmann::json task) = 0;
  // The checks run_task makes before running `task` (the rules of a task-file line), without
  // running it: the door refuses a bad task with a 400 before it queues it (and before a 202).
  // Default: nothing to check.
  virtual Status check_task(const std::string& name, const nlohmann::json& task) const {
    (void)name;
    (void)task;
    return ok_status();
  }
};

}  // namespace kevlaya::http
