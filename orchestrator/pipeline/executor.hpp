// The effectful pipeline runner: drives tasks through a pipeline's stages against real children.
//
//   for each batch the Planner hands out (all items on one model):
//     acquire(stage.model) -> render -> POST /v1/chat/completions with the stage's constraint
//     -> guard (invalid: retry with a new seed, at most max_invalid_retries) -> record -> next
//   a verify reject sends the task back to decide with the verifier's feedback (max_rounds);
//   a finished task (accepted / rejected / error) is handed to on_task_done (the journal) at once.
//
// Switches: the executor subscribes to the supervisor's events; each switch record is counted and
// attributed to the task whose acquire caused it (the same for `run` and REST runs).
// Strictly serial: one model call in flight at a time. A child crash under a call is retried once
// after the supervisor restarts the child; a second failure ends the task as `error`, never the run.
// Runs on one executor (a strand or a single-threaded io_context); callbacks run there too.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "config/config.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/tasks.hpp"

namespace kevlaya::supervisor {
class Supervisor;
}  // namespace kevlaya::supervisor

namespace kevlaya::pipeline {

struct ExecOptions {
  Order order = Order::stage_major;
  std::chrono::milliseconds call_timeout{std::chrono::minutes(10)};     // one completion
  bool constrain = true;  // false: send no grammar/response_format (outputs are still checked); eval
};

// Live counters for progress display.
struct RunProgress {
  std::size_t total = 0;
  std::size_t finished = 0;
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  std::size_t errors = 0;
  std::size_t calls = 0;
  int switches = 0;
  std::string resident;  // profile of the latest lease ("" before the first)
  std::string stage;     // stage of the call in flight
  double elapsed_s = 0;
  double eta_s = -1;     // < 0: unknown yet
};

struct StageTotals {
  std::string stage;
  std::string model;
  int calls = 0;               // completions requested (incl. retries)
  int invalid = 0;             // outputs the guard refused
  double call_ms = 0;          // wall time of the calls
  std::int64_t predicted_n = 0;
  double predicted_ms = 0;     // from llama-server's timings
  double tokens_per_s() const { return predicted_ms > 0 ? 1e3 * predicted_n / predicted_ms : 0; }
};

struct RunSummary {
  std::size_t total = 0;
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  std::size_t errors = 0;
  std::size_t unfinished = 0;  // left when interrupted, or not durably recorded (see on_task_done)
  int switches = 0;            // model loads a call of the run used, incl. the first one
  double wall_s = 0;
  bool interrupted = false;
  std::optional<Error> fatal;  // the run itself failed (e.g. the journal could not be written)
  std::vector<StageTotals> stages;
  nlohmann::json to_json() const;
};

class Executor {
 public:
  using TaskDone = std::function<Status(const nlohmann::json& record)>;
  using ProgressFn = std::function<void(const RunProgress&)>;

  // `sup` must outlive the Executor. The pipeline is copied.
  Executor(boost::asio::any_io_executor ex, supervisor::Supervisor& sup, config::Pipeline pipeline,
           ExecOptions opts = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Called with each finished task's record before the next task starts. An error stops the run
  // (RunSummary::fatal) and the task is not counted as finished: counts match what was recorded.
  void on_task_done(TaskDone cb);
  // Called after every call and every finished task.
  void on_progress(ProgressFn cb);

  // Runs `tasks` to their verdicts (or until stop()). Tasks not finished are not reported.
  boost::asio::awaitable<RunSummary> run(std::vector<Task> tasks);

  // Abandons the call in flight (closes its connection) and makes run() return soon.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One task through `pipeline`, task-major, no journal: its record (for the REST door).
boost::asio::awaitable<Result<nlohmann::json>> run_one(boost::asio::any_io_executor ex,
                                                       supervisor::Supervisor& sup,
                                                       config::Pipeline pipeline, Task task);

}  // namespace kevlaya::pipeline
