// The load ETA a starting child shows in /status and in loading messages: honest past the estimate.
#include <catch2/catch.hpp>

#include "supervisor/load_progress.hpp"

using kevlaya::supervisor::apply_load_estimate;
using kevlaya::supervisor::LoadProgress;

TEST_CASE("load eta: under the estimate, the time left") {
  LoadProgress p{"loading tensors", 40.0, std::nullopt};
  apply_load_estimate(p, 12.0, 4.5);
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(7.5));
  CHECK(p.stage == "loading tensors");
}

TEST_CASE("load eta: a load slower than its estimate never shows 'about 0 s left'") {
  LoadProgress p{"loading tensors (33/33 layers on GPU)", 97.0, std::nullopt};
  apply_load_estimate(p, 12.0, 30.0);
  CHECK_FALSE(p.eta_s);  // no ETA to give: not 0
  CHECK(p.stage == "loading tensors (33/33 layers on GPU); taking longer than the estimated 12 s");
  CHECK(p.pct == 97.0);  // what the log says is kept
}

TEST_CASE("load eta: a load exactly at its estimate is overdue, not 0 s from done") {
  LoadProgress p{"starting", std::nullopt, std::nullopt};
  apply_load_estimate(p, 8.0, 8.0);
  CHECK_FALSE(p.eta_s);
  CHECK(p.stage == "taking longer than the estimated 8 s");
}
