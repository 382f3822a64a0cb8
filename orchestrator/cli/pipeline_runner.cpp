#include "cli/pipeline_runner.hpp"

#include "pipeline/executor.hpp"
#include "pipeline/tasks.hpp"

namespace kevlaya::cli {

ConfigPipelineRunner::ConfigPipelineRunner(boost::asio::any_io_executor ex, supervisor::Supervisor& sup,
                                           config::Config cfg)
    : ex_(std::move(ex)), sup_(sup), cfg_(std::make_shared<const config::Config>(std::move(cfg))) {}

void ConfigPipelineRunner::set_config(config::Config cfg) {
  cfg_ = std::make_shared<const config::Config>(std::move(cfg));
}

boost::asio::awaitable<Result<nlohmann::json>> ConfigPipelineRunner::run_task(std::string name,
                                                                              nlohmann::json task) {
  const auto cfg = cfg_;  // this run keeps the version it started with
  const auto* p = cfg->find_pipeline(name);
  if (!p) co_return make_error(Errc::not_found, "no pipeline named '" + name + "'");
  if (task.is_object() && !task.contains("id")) task["id"] = "rest";
  // The same rules as a line of a task file (id, input, candidates, vars).
  auto list = pipeline::parse_tasks(task.dump());
  if (!list.issues.empty()) co_return make_error(Errc::bad_request, "task: " + list.issues.front().message);
  if (list.tasks.empty()) co_return make_error(Errc::bad_request, "task: expected an object with an input");
  co_return co_await pipeline::run_one(ex_, sup_, *p, std::move(list.tasks.front()));
}

}  // namespace kevlaya::cli
