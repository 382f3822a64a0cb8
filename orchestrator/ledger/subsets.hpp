// The one subset search of the planner: the largest groups of children that fit a budget together.
// Pure and bounded in work for any number of children: a branch-and-bound walk that only reaches
// maximal fitting sets, stopped after kMaxFittingSets sets or kMaxSearchSteps steps (then a
// greedy fallback covers every child; docs/ledger.md, "How many sets are searched").
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kevlaya::ledger {

inline constexpr std::size_t kMaxFittingSets = 64;       // maximal sets kept at most per search
inline constexpr std::size_t kMaxSearchSteps = 1 << 16;  // include/exclude decisions examined at most

struct FittingSets {
  std::vector<std::vector<std::size_t>> sets;  // item indexes, ascending; ordered as bitmasks ascending
  std::size_t examined = 0;                    // search steps taken (the work bound the tests assert)
  bool truncated = false;                      // a limit was reached: the greedy fallback completed `sets`
};

// The maximal sets of items (0..cost.size()-1) that hold every index in `required` and whose summed
// cost fits `budget`: no other item fits beside any of them. With `one_more`, at most one item
// beside `required` (the sets are `required` plus each item that fits beside it). Empty when
// `required` alone does not fit; `required` alone when nothing fits beside it. When a limit stops
// the walk, each item no set found holds gets one greedy set (it, the required, then the others in
// order while they fit), so every item that fits beside `required` is in some set.
FittingSets maximal_fitting(const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& required,
                            std::uint64_t budget, bool one_more = false);

// Whether `a` comes before `b` as bitmasks of their (ascending) indexes: the order sets are listed in.
bool mask_before(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b);

}  // namespace kevlaya::ledger
