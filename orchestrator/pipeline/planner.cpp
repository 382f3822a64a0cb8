#include "pipeline/planner.hpp"

#include <stdexcept>
#include <tuple>

namespace kevlaya::pipeline {
namespace {

std::vector<PlanStage> plan_stages(const config::Pipeline& p) {
  std::vector<PlanStage> out;
  for (const auto& s : p.stages) out.push_back({s.model, s.role});
  return out;
}

}  // namespace

Planner::Planner(const config::Pipeline& pipeline, std::size_t n_tasks, Order order)
    : Planner(plan_stages(pipeline), pipeline.max_rounds, n_tasks, order) {}

Planner::Planner(std::vector<PlanStage> stages, int max_rounds, std::size_t n_tasks, Order order)
    : stages_(std::move(stages)), max_rounds_(std::max(1, max_rounds)), order_(order), tasks_(n_tasks) {
  if (stages_.empty()) throw std::invalid_argument("Planner: a pipeline needs at least one stage");
  for (std::size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].role == config::StageRole::decide) {
      loop_stage_ = i;
      break;
    }
}

std::vector<WorkItem> Planner::next_batch(const std::string& loaded_model) {
  auto batch = order_ == Order::stage_major ? stage_major(loaded_model) : task_major();
  if (!batch.empty()) {
    const auto& model = stages_[batch.front().stage].model;
    if (model != last_model_) ++switches_;
    last_model_ = model;
  }
  return batch;
}

std::vector<WorkItem> Planner::take_all_for(const std::string& model) {
  std::vector<WorkItem> out;
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    auto& p = tasks_[t];
    if (p.state == TaskState::pending && stages_[p.stage].model == model) {
      out.push_back({t, p.stage, p.round});
      p.state = TaskState::running;
    }
  }
  return out;
}

std::vector<WorkItem> Planner::stage_major(const std::string& loaded_model) {
  const std::string& preferred = loaded_model.empty() ? last_model_ : loaded_model;
  if (!preferred.empty())
    if (auto batch = take_all_for(preferred); !batch.empty()) return batch;
  // Switching while items still run would only queue behind them: wait for the batch instead.
  for (const auto& p : tasks_)
    if (p.state == TaskState::running) return {};
  const Progress* earliest = nullptr;
  for (const auto& p : tasks_)
    if (p.state == TaskState::pending &&
        (!earliest || std::tie(p.round, p.stage) < std::tie(earliest->round, earliest->stage)))
      earliest = &p;
  if (!earliest) return {};
  return take_all_for(stages_[earliest->stage].model);
}

std::vector<WorkItem> Planner::task_major() {
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    auto& p = tasks_[t];
    if (p.state == TaskState::running) return {};  // finish this task first
    if (p.state == TaskState::pending) {
      p.state = TaskState::running;
      return {WorkItem{t, p.stage, p.round}};
    }
  }
  return {};
}

void Planner::complete(const WorkItem& item, Outcome outcome) {
  auto& p = tasks_.at(item.task);
  if (p.state != TaskState::running || p.stage != item.stage || p.round != item.round)
    throw std::logic_error("Planner::complete: item is not running");
  switch (outcome) {
    case Outcome::advance:
      ++p.stage;
      p.state = p.stage == stages_.size() ? TaskState::accepted : TaskState::pending;
      break;
    case Outcome::reject:
      if (p.round >= max_rounds_) {
        p.state = TaskState::rejected;
      } else {
        ++p.round;
        p.stage = loop_stage_;
        p.state = TaskState::pending;
      }
      break;
    case Outcome::fail:
      p.state = TaskState::failed;
      break;
  }
}

bool Planner::done() const {
  for (const auto& p : tasks_)
    if (p.state == TaskState::pending || p.state == TaskState::running) return false;
  return true;
}

}  // namespace kevlaya::pipeline
