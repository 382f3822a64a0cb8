// Fitting a models_dir model's ngl, ctx and parallel to a budget (ledger/fit.hpp), on a 7B shape
// trained for 32768: every boundary is checked against the estimate itself.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "ledger/fit.hpp"
#include "ledger/plan.hpp"

using namespace kevlaya;

namespace {

constexpr std::uint64_t kOverhead = 450 * ledger::kMiB;

ledger::ProfileInput input() {
  ledger::ProfileInput in;
  in.name = "kev";
  in.model = test::q4ks_7b_info();
  return in;
}

std::uint64_t cost(int ngl, int ctx, int parallel = 1) {
  auto in = input();
  in.flags.ngl = ngl;
  in.flags.ctx = ctx;
  in.flags.parallel = parallel;
  return ledger::estimate(in.model, false, in.flags, {}, kOverhead).total_gpu();
}

// The budget whose usable part (all but the planner's headroom) is `bytes`, and that part.
std::uint64_t budget_for(std::uint64_t bytes) {
  return static_cast<std::uint64_t>(static_cast<double>(bytes) / (1.0 - ledger::kHeadroomWarn)) + 2;
}
std::uint64_t usable(std::uint64_t budget) {
  return static_cast<std::uint64_t>(static_cast<double>(budget) * (1.0 - ledger::kHeadroomWarn));
}

}  // namespace

TEST_CASE("fit: room for four slots of the trained context -> parallel 4, all layers") {
  const auto c = ledger::fit_model(input(), 64ULL << 30, kOverhead, 0, true);
  CHECK(c.fits);
  CHECK(c.ngl == -1);
  CHECK(c.parallel == 4);
  CHECK(c.ctx == 4 * 32768);
  CHECK(c.why.find("4 slots with the trained context 32768 each") != std::string::npos);
}

TEST_CASE("fit: exactly the trained context fits -> one slot, ctx 32768") {
  const std::uint64_t budget = budget_for(cost(-1, 32768));
  REQUIRE(cost(-1, 2 * 32768, 2) > usable(budget));
  const auto c = ledger::fit_model(input(), budget, kOverhead, 0, true);
  CHECK(c.parallel == 1);
  CHECK(c.ctx == 32768);
  CHECK(c.ngl == -1);
  CHECK(c.why.find("all layers and the trained context 32768") != std::string::npos);
}

TEST_CASE("fit: less than the trained context -> the largest ctx that fits, all layers") {
  const std::uint64_t budget = budget_for(cost(-1, 10000));
  const auto c = ledger::fit_model(input(), budget, kOverhead, 0, true);
  CHECK(c.ngl == -1);
  CHECK(c.ctx % 256 == 0);
  CHECK(cost(-1, c.ctx) <= usable(budget));
  CHECK(cost(-1, c.ctx + 256) > usable(budget));  // the largest, with the headroom left free
  CHECK(c.ctx >= 4096);
  CHECK(c.why.find("is the largest that fits the GPU budget (trained 32768)") != std::string::npos);
}

TEST_CASE("fit: all layers do not fit at ctx 4096 -> the most layers that do") {
  const std::uint64_t budget = budget_for(cost(20, 4096));
  REQUIRE(cost(-1, 4096) > usable(budget));
  const auto c = ledger::fit_model(input(), budget, kOverhead, 0, true);
  CHECK(c.fits);
  CHECK(c.ctx == 4096);
  CHECK(c.ngl == 20);
  CHECK(cost(21, 4096) > usable(budget));
  CHECK(c.why.find("all 33 layers do not fit at ctx 4096; 20 layers on the GPU do") != std::string::npos);
}

TEST_CASE("fit: nothing fits -> fits is false and the plan will refuse it") {
  const auto c = ledger::fit_model(input(), budget_for(cost(0, 4096)) - 8, kOverhead, 0, true);
  CHECK_FALSE(c.fits);
  CHECK(c.ctx == 4096);
  CHECK(c.why.find("does not fit the GPU budget even at ctx 4096 with no layer on the GPU") != std::string::npos);
}

TEST_CASE("fit: bytes the ledger does not price (a projector) are kept free") {
  const std::uint64_t budget = budget_for(cost(-1, 32768));
  const auto c = ledger::fit_model(input(), budget, kOverhead, 512 * ledger::kMiB, true);
  CHECK(c.ctx < 32768);
  CHECK(cost(-1, c.ctx) + 512 * ledger::kMiB <= usable(budget));
}

TEST_CASE("fit: without a GPU host RAM decides and ngl stays all") {
  auto in = input();
  in.flags.ctx = 8192;
  const std::uint64_t ram = budget_for(ledger::host_bytes(in));
  const auto c = ledger::fit_model(input(), ram, kOverhead, 0, false);
  CHECK(c.ngl == -1);
  CHECK(c.parallel == 1);
  CHECK(c.ctx >= 8192);
  CHECK(c.ctx < 8192 + 256 * 4);  // KV grows with ctx: the largest that fits is about 8192
  CHECK(c.why.find("host RAM") != std::string::npos);
}
