#include "cli/pipeline_runner.hpp"

#include "pipeline/executor.hpp"
#include "pipeline/tasks.hpp"

namespace kevlaya::cli {

ConfigPipelineRunner::ConfigPipelineRunner(boost::asio::any_io_executor ex, supervisor::Supervisor& sup,
                                           config::ConfigPtr cfg)
    : ex_(std::move(ex)), sup_(sup), cfg_(std::move(cfg)) {}

void ConfigPipelineRunner::set_config(config::ConfigPtr cfg) { cfg_ = std::move(cfg); }

namespace {

// A REST task by the rules of a line of a task file (id, input, candidates, vars); id "rest" when absent.
Result<pipeline::Task> to_task(nlohmann::json task) {
  if (task.is_object() && !task.contains("id")) task["id"] = "rest";
  auto list = pipeline::parse_tasks(task.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!list.issues.empty()) return make_error(Errc::bad_request, "task: " + list.issues.front().message);
  if (list.tasks.empty()) return make_error(Errc::bad_request, "task: expected an object with an input");
  return std::move(list.tasks.front());
}

}  // namespace

Status ConfigPipelineRunner::check_task(const std::string& name, const nlohmann::json& task) const {
  if (!cfg_->find_pipeline(name)) return make_error(Errc::not_found, "no pipeline named '" + name + "'");
  auto t = to_task(task);
  if (!t) return t.error();
  return ok_status();
}

boost::asio::awaitable<Result<nlohmann::json>> ConfigPipelineRunner::run_task(std::string name,
                                                                              nlohmann::json task) {
  const auto cfg = cfg_;  // this run keeps the version it started with
  const auto* p = cfg->find_pipeline(name);
  if (!p) co_return make_error(Errc::not_found, "no pipeline named '" + name + "'");
  auto t = to_task(std::move(task));
  if (!t) co_return t.error();
  co_return co_await pipeline::run_one(ex_, sup_, *p, std::move(t.value()));
}

}  // namespace kevlaya::cli
