// The planner's subset search (ledger/subsets.hpp): equal to exhaustive enumeration where that is
// cheap, bounded in work for any number of children, and every set it returns fits and is maximal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "ledger/plan.hpp"
#include "ledger/subsets.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;

namespace {

using IndexSets = std::vector<std::vector<std::size_t>>;

// The search as the planner did it before: every bitmask, then the maximal ones, in mask order.
IndexSets exhaustive(const std::vector<std::uint64_t>& cost, unsigned required, std::uint64_t budget, bool one_more) {
  const std::size_t n = cost.size();
  std::vector<unsigned> fit;
  for (unsigned m = required ? required : 1; m < (1U << n); ++m) {
    if ((m & required) != required || (one_more && __builtin_popcount(m & ~required) > 1)) continue;
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (m & (1U << i)) sum += cost[i];
    if (sum <= budget) fit.push_back(m);
  }
  IndexSets out;
  for (const auto m : fit) {
    if (std::any_of(fit.begin(), fit.end(), [&](unsigned o) { return o != m && (o & m) == m; })) continue;
    auto& v = out.emplace_back();
    for (std::size_t i = 0; i < n; ++i)
      if (m & (1U << i)) v.push_back(i);
  }
  return out;
}

std::uint64_t sum_of(const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& set) {
  std::uint64_t s = 0;
  for (const auto i : set) s += cost[i];
  return s;
}

// Every set fits and holds `required`; nothing else fits beside any of them; no two are equal.
void check_sound(const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& required, std::uint64_t budget,
                 const IndexSets& sets) {
  for (const auto& s : sets) {
    CHECK(sum_of(cost, s) <= budget);
    for (const auto r : required) CHECK(std::find(s.begin(), s.end(), r) != s.end());
    for (std::size_t i = 0; i < cost.size(); ++i)
      if (std::find(s.begin(), s.end(), i) == s.end()) CHECK(sum_of(cost, s) + cost[i] > budget);
  }
  for (std::size_t a = 0; a < sets.size(); ++a)
    for (std::size_t b = a + 1; b < sets.size(); ++b) CHECK(sets[a] != sets[b]);
}

}  // namespace

TEST_CASE("subsets: equal to the exhaustive search on small random cases, pins and one-more included") {
  std::mt19937_64 rng(20261202);
  int compared = 0;
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 1 + rng() % 10;
    std::vector<std::uint64_t> cost(n);
    for (auto& c : cost) c = 1 + rng() % 40;
    const std::uint64_t budget = rng() % 120;
    unsigned req_mask = round % 3 == 0 ? static_cast<unsigned>(rng() % (1U << n)) & static_cast<unsigned>(rng() % (1U << n)) : 0;
    std::vector<std::size_t> required;
    for (std::size_t i = 0; i < n; ++i)
      if (req_mask & (1U << i)) required.push_back(i);
    const bool one_more = round % 5 == 0;
    INFO("round " << round << ", n " << n << ", budget " << budget << ", required mask " << req_mask);
    const auto got = maximal_fitting(cost, required, budget, one_more);
    const auto all = exhaustive(cost, req_mask, budget, one_more);
    if (!got.truncated) {
      CHECK(got.sets == all);
      ++compared;
      continue;
    }
    // More than 64 maximal sets (only possible from 8 children up): a sound part of them.
    CHECK(n >= 8);
    check_sound(cost, required, budget, got.sets);
    for (const auto& set : got.sets) CHECK(std::find(all.begin(), all.end(), set) != all.end());
  }
  CHECK(compared > 1900);
}

TEST_CASE("subsets: 10, 16 and 64 equal children stay within the work bound, every set fits and is maximal") {
  for (const std::size_t n : {10U, 16U, 64U}) {
    INFO(n << " children");
    const std::vector<std::uint64_t> cost(n, 600);  // five fit together: C(n, 5) maximal sets
    const auto got = maximal_fitting(cost, {}, 3000, false);
    CHECK(got.examined <= kMaxSearchSteps + n * n);
    CHECK(got.sets.size() <= kMaxFittingSets + n);
    CHECK(got.truncated);  // C(10, 5) = 252 > 64: the limit, then the greedy cover
    check_sound(cost, {}, 3000, got.sets);
    for (std::size_t i = 0; i < n; ++i)
      CHECK(std::any_of(got.sets.begin(), got.sets.end(), [&](const auto& s) { return std::find(s.begin(), s.end(), i) != s.end(); }));
  }
}

TEST_CASE("subsets: a pin among 64 children of mixed sizes: bounded, sound, every child that fits beside it covered") {
  std::vector<std::uint64_t> cost(64);
  for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 100 + (i * 37) % 900;
  const auto got = maximal_fitting(cost, {7}, 3000, false);
  CHECK(got.examined <= kMaxSearchSteps + 64 * 64);
  check_sound(cost, {7}, 3000, got.sets);
  for (std::size_t i = 0; i < cost.size(); ++i)
    CHECK(std::any_of(got.sets.begin(), got.sets.end(), [&](const auto& s) { return std::find(s.begin(), s.end(), i) != s.end(); }));
}

TEST_CASE("subsets: a search under the limits is complete: every maximal set of 16 children of two sizes") {
  // 12 of 1500 and 4 of 400 in 2000: each big one with one small one (48 sets), or the four small
  // ones together: 49 maximal sets, all found without the fallback, in a few hundred steps.
  std::vector<std::uint64_t> cost(12, 1500);
  cost.insert(cost.end(), 4, 400);
  const auto got = maximal_fitting(cost, {}, 2000, false);
  REQUIRE_FALSE(got.truncated);
  check_sound(cost, {}, 2000, got.sets);
  CHECK(got.sets.size() == 49);
  CHECK(got.sets == exhaustive(cost, 0, 2000, false));
  CHECK(got.examined < 1000);  // branch and bound, not 2^16
}

namespace {

std::vector<ProfileInput> command_profiles(std::size_t n, std::uint64_t mib) {
  std::vector<ProfileInput> in;
  for (std::size_t i = 0; i < n; ++i) {
    ProfileInput p;
    p.name = "p" + std::to_string(i);
    p.model.path = "/models/p" + std::to_string(i) + ".gguf";
    p.declared_gpu = mib * kMiB;
    in.push_back(std::move(p));
  }
  return in;
}

}  // namespace

TEST_CASE("plan: 10, 16 and 64 profiles of residency auto plan in bounded work, and each allowed set fits and is maximal") {
  for (const std::size_t n : {10U, 16U, 64U}) {
    INFO(n << " profiles");
    const auto in = command_profiles(n, 500);
    const auto plan = make_plan(in, PlanOptions{3000 * kMiB, 100 * kMiB, config::Residency::auto_});
    CHECK(plan.mode == Mode::rotate);
    CHECK(plan.sets_examined <= kMaxSearchSteps + n * n);
    CHECK(plan.allowed_sets.size() <= kMaxFittingSets + n);
    CHECK(plan.sets.size() <= plan.allowed_sets.size());  // priced: the allowed sets, not 2^n combinations
    for (const auto& s : plan.allowed_sets) CHECK(s.size() == 5);  // 5 x 600 MiB = 3000: none is left alone
    for (const auto& p : in)
      CHECK(std::any_of(plan.allowed_sets.begin(), plan.allowed_sets.end(),
                        [&](const auto& s) { return std::find(s.begin(), s.end(), p.name) != s.end(); }));
  }
}

TEST_CASE("plan: a pin among 16 profiles is planned (before: refused as too many to plan)") {
  auto in = command_profiles(16, 500);
  in[3].pin = true;
  const auto plan = make_plan(in, PlanOptions{3000 * kMiB, 100 * kMiB, config::Residency::auto_});
  CHECK(plan.ok());
  REQUIRE_FALSE(plan.allowed_sets.empty());
  for (const auto& s : plan.allowed_sets) {
    CHECK(s.size() == 5);
    CHECK(std::find(s.begin(), s.end(), "p3") != s.end());
  }
}

TEST_CASE("maximal_sets: a thousand sets of ten names are filtered in one pass over the kept ones") {
  std::vector<std::vector<std::string>> sets;
  for (int i = 0; i < 1000; ++i) {
    auto& s = sets.emplace_back();
    for (int k = 0; k < 10; ++k) s.push_back("p" + std::to_string((i + k * 7) % 64));
  }
  sets.push_back({"p0"});       // inside the first
  sets.push_back(sets.front()); // a duplicate: the first kept
  const auto kept = maximal_sets(sets);
  CHECK(kept.size() <= 1000);
  CHECK(kept.front() == sets.front());
  CHECK(std::count(kept.begin(), kept.end(), sets.front()) == 1);
  CHECK(std::find(kept.begin(), kept.end(), std::vector<std::string>{"p0"}) == kept.end());
}

// The greedy cover filled each set in index order, so with thousands of small children every
// uncovered child got a set of its own beside the same first few (2,000 sets for a 2,000-model
// folder: minutes of planning and a 700 KB log line). Uncovered children go first now.
TEST_CASE("subsets: after a stop, 2,000 small children are covered by a few sets, not one each") {
  const std::size_t n = 2000;
  const std::vector<std::uint64_t> cost(n, 600);  // five fit together
  const auto got = maximal_fitting(cost, {}, 3000, false);
  CHECK(got.truncated);
  CHECK(got.sets.size() <= kMaxFittingSets + n / 5 + 1);
  CHECK(got.examined <= kMaxSearchSteps + n * n);
  // Sound (each set fits and is maximal: five of the equal children) and covering, counted rather
  // than checked one by one (millions of checks).
  std::size_t bad = 0;
  std::vector<bool> seen(n, false);
  for (const auto& s : got.sets) {
    if (s.size() != 5 || sum_of(cost, s) > 3000) ++bad;
    for (const auto i : s) seen[i] = true;
  }
  CHECK(bad == 0);
  CHECK(std::count(seen.begin(), seen.end(), true) == static_cast<long>(n));
}
