// Batch ordering (pure): which (task, stage) items to run next so that a batch over many tasks
// switches models as rarely as possible. Each task is a small state machine:
//   stage 0 -> stage 1 -> ... -> accepted;  a verify reject loops back to the first decide stage
//   with round + 1, or ends `rejected` after max_rounds;  a failure ends `failed`.
// Stage-major runs every pending item of one model before moving on (about 2 switches plus the
// retries for a decide/verify batch); task-major finishes each task before the next (2 per task).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::pipeline {

enum class Order { stage_major, task_major };
enum class TaskState { pending, running, accepted, rejected, failed };
enum class Outcome {
  advance,  // the stage produced its output (verify: pass)
  reject,   // a verify stage rejected
  fail,     // the stage could not produce a valid output (error, invalid after retries)
};

struct WorkItem {
  std::size_t task = 0;   // index into the task list
  std::size_t stage = 0;  // index into Pipeline::stages
  int round = 1;          // 1-based decide/verify round
  bool operator==(const WorkItem&) const = default;
};

struct PlanStage {
  std::string model;
  config::StageRole role = config::StageRole::other;
};

class Planner {
 public:
  Planner(const config::Pipeline& pipeline, std::size_t n_tasks, Order order);
  Planner(std::vector<PlanStage> stages, int max_rounds, std::size_t n_tasks, Order order);

  // The next items to run, all on one model, now marked running. Stage-major: every pending
  // item for `loaded_model` if there is one, else (once nothing is running) for the model of
  // the earliest (round, stage) pending item. Task-major: the next item of the first unfinished task. Empty when nothing is
  // pending (all finished, or waiting for running items).
  std::vector<WorkItem> next_batch(const std::string& loaded_model = {});

  // Records the outcome of a running item and moves its task on.
  void complete(const WorkItem& item, Outcome outcome);

  bool done() const;  // every task accepted, rejected or failed
  TaskState state(std::size_t task) const { return tasks_.at(task).state; }
  int round(std::size_t task) const { return tasks_.at(task).round; }
  int switches() const { return switches_; }  // model changes between batches; first load counts
  const std::string& model_of(const WorkItem& item) const { return stages_.at(item.stage).model; }

 private:
  struct Progress {
    std::size_t stage = 0;
    int round = 1;
    TaskState state = TaskState::pending;
  };
  std::vector<WorkItem> take_all_for(const std::string& model);
  std::vector<WorkItem> stage_major(const std::string& loaded_model);
  std::vector<WorkItem> task_major();

  std::vector<PlanStage> stages_;
  int max_rounds_ = 1;
  std::size_t loop_stage_ = 0;  // where a rejected task starts its next round
  Order order_;
  std::vector<Progress> tasks_;
  std::string last_model_;
  int switches_ = 0;
};

}  // namespace kevlaya::pipeline
