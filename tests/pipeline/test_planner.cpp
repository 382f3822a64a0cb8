#include <catch2/catch.hpp>

#include <functional>

#include "pipeline/planner.hpp"

using namespace kevlaya;
using namespace kevlaya::pipeline;
using config::StageRole;

namespace {
const std::vector<PlanStage> kDecideVerify = {{"kev", StageRole::decide}, {"laya", StageRole::verify}};

// Drives the planner to the end; `verdict(task, round)` says whether the verify stage passes.
void drive(Planner& p, const std::function<bool(std::size_t, int)>& verdict, std::vector<std::string>* models = nullptr) {
  std::string loaded;
  for (int guard = 0; !p.done() && guard < 10000; ++guard) {
    auto batch = p.next_batch(loaded);
    REQUIRE_FALSE(batch.empty());
    loaded = p.model_of(batch.front());
    if (models) models->push_back(loaded);
    for (const auto& it : batch) {
      REQUIRE(p.model_of(it) == loaded);  // a batch never mixes models
      const bool verify = it.stage == 1;
      p.complete(it, !verify || verdict(it.task, it.round) ? Outcome::advance : Outcome::reject);
    }
  }
}
}  // namespace

TEST_CASE("stage-major: 50 tasks cost 2 switches plus 2 per retry round, task-major 2 per task", "[planner]") {
  auto verdict = [](std::size_t task, int round) { return task % 10 != 0 || round > 1; };  // 5 retried
  Planner stage_major(kDecideVerify, 3, 50, Order::stage_major);
  std::vector<std::string> models;
  drive(stage_major, verdict, &models);
  CHECK(models == std::vector<std::string>{"kev", "laya", "kev", "laya"});
  CHECK(stage_major.switches() == 4);

  Planner task_major(kDecideVerify, 3, 50, Order::task_major);
  drive(task_major, verdict);
  CHECK(task_major.switches() == 2 * 50 + 2 * 5);
  for (std::size_t t = 0; t < 50; ++t) {
    CHECK(stage_major.state(t) == TaskState::accepted);
    CHECK(task_major.state(t) == TaskState::accepted);
    CHECK(stage_major.round(t) == (t % 10 == 0 ? 2 : 1));
  }
}

TEST_CASE("planner: a task rejected in every round ends rejected after max_rounds", "[planner]") {
  Planner p(kDecideVerify, 3, 2, Order::stage_major);
  drive(p, [](std::size_t task, int) { return task == 0; });
  CHECK(p.state(0) == TaskState::accepted);
  CHECK(p.state(1) == TaskState::rejected);
  CHECK(p.round(1) == 3);
  CHECK(p.switches() == 6);  // 3 rounds of kev -> laya
}

TEST_CASE("planner: failed items end the task, others continue", "[planner]") {
  Planner p(kDecideVerify, 2, 3, Order::stage_major);
  auto batch = p.next_batch();
  REQUIRE(batch.size() == 3);
  p.complete(batch[0], Outcome::fail);
  p.complete(batch[1], Outcome::advance);
  p.complete(batch[2], Outcome::advance);
  auto verify = p.next_batch();
  CHECK(verify == std::vector<WorkItem>{{1, 1, 1}, {2, 1, 1}});
  CHECK(p.state(0) == TaskState::failed);
}

TEST_CASE("planner: a reject loops back to the first decide stage, skipping earlier stages", "[planner]") {
  std::vector<PlanStage> three = {{"prep", StageRole::other}, {"kev", StageRole::decide}, {"laya", StageRole::verify}};
  Planner p(three, 2, 1, Order::stage_major);
  auto a = p.next_batch();
  p.complete(a[0], Outcome::advance);
  auto b = p.next_batch();
  p.complete(b[0], Outcome::advance);
  auto c = p.next_batch();
  REQUIRE(c == std::vector<WorkItem>{{0, 2, 1}});
  p.complete(c[0], Outcome::reject);
  auto d = p.next_batch();
  CHECK(d == std::vector<WorkItem>{{0, 1, 2}});
}

TEST_CASE("planner stage-major prefers the loaded model when it has work", "[planner]") {
  Planner p(kDecideVerify, 3, 4, Order::stage_major);
  auto decides = p.next_batch();
  REQUIRE(decides.size() == 4);
  p.complete(decides[0], Outcome::advance);  // task 0 now waits for laya
  p.complete(decides[1], Outcome::advance);
  p.complete(decides[2], Outcome::advance);
  p.complete(decides[3], Outcome::advance);
  auto verifies = p.next_batch("laya");
  REQUIRE(verifies.size() == 4);
  p.complete(verifies[0], Outcome::reject);  // back to kev, round 2
  p.complete(verifies[1], Outcome::advance);
  // Tasks 2 and 3 still running on laya; the retry waits for kev.
  CHECK(p.next_batch("laya").empty());
  CHECK(p.next_batch("kev") == std::vector<WorkItem>{{0, 0, 2}});
}

TEST_CASE("planner task-major waits for the running item of the current task", "[planner]") {
  Planner p(kDecideVerify, 1, 2, Order::task_major);
  auto a = p.next_batch();
  CHECK(a == std::vector<WorkItem>{{0, 0, 1}});
  CHECK(p.next_batch().empty());
  p.complete(a[0], Outcome::advance);
  CHECK(p.next_batch() == std::vector<WorkItem>{{0, 1, 1}});
}

TEST_CASE("planner rejects completing an item that is not running", "[planner]") {
  Planner p(kDecideVerify, 1, 1, Order::stage_major);
  CHECK_THROWS_AS(p.complete(WorkItem{0, 0, 1}, Outcome::advance), std::logic_error);
}
