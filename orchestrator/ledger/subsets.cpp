// Branch and bound over the items by descending cost: include an item when it fits, or leave it
// out; a branch is cut as soon as no completion can be maximal (the smallest item left out would
// still fit beside everything that remains). Every leaf reached is a distinct maximal set.
#include "ledger/subsets.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace kevlaya::ledger {
namespace {

constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

class Search {
 public:
  Search(const std::vector<std::uint64_t>& cost, std::vector<std::size_t> order, std::uint64_t base, std::uint64_t budget,
         FittingSets& out)
      : cost_(cost), order_(std::move(order)), budget_(budget), sum_(base), rest_(order_.size() + 1, 0), out_(out) {
    for (std::size_t k = order_.size(); k-- > 0;) rest_[k] = rest_[k + 1] + cost_[order_[k]];
  }

  // `min_out`: the cost of the smallest item left out so far (kNone: none).
  void walk(std::size_t k, std::uint64_t min_out) {
    if (stopped_) return;
    if (++out_.examined > kMaxSearchSteps) return stop();
    if (min_out != kNone && sum_ + rest_[k] + min_out <= budget_) return;  // cannot become maximal
    if (k == order_.size() || sum_ + rest_[k] <= budget_) {  // everything left fits: one completion
      const auto mark = chosen_.size();
      chosen_.insert(chosen_.end(), order_.begin() + static_cast<long>(k), order_.end());
      record();
      chosen_.resize(mark);
      return;
    }
    const std::size_t item = order_[k];
    if (sum_ + cost_[item] <= budget_) {
      chosen_.push_back(item);
      sum_ += cost_[item];
      walk(k + 1, min_out);
      sum_ -= cost_[item];
      chosen_.pop_back();
    }
    walk(k + 1, std::min(min_out, cost_[item]));
  }

 private:
  void record() {
    if (out_.sets.size() == kMaxFittingSets) return stop();
    out_.sets.push_back(chosen_);
  }
  void stop() {
    stopped_ = true;
    out_.truncated = true;
  }

  const std::vector<std::uint64_t>& cost_;
  const std::vector<std::size_t> order_;
  const std::uint64_t budget_;
  std::uint64_t sum_;
  std::vector<std::uint64_t> rest_;  // rest_[k]: summed cost of order_[k..]
  std::vector<std::size_t> chosen_;
  bool stopped_ = false;
  FittingSets& out_;
};

// After a stop: each item in no set gets one greedy set (it, then the others in index order
// while they fit, those in no set yet first, so that a few sets cover thousands of small items
// instead of one set each); greedy by construction, so maximal.
void cover_the_rest(const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& free, std::uint64_t base,
                    std::uint64_t budget, FittingSets& out) {
  std::vector<bool> covered(cost.size(), false);
  for (const auto& s : out.sets)
    for (const auto i : s) covered[i] = true;
  for (const auto i : free) {
    if (covered[i] || base + cost[i] > budget) continue;
    std::vector<std::size_t> set{i};
    std::uint64_t sum = base + cost[i];
    for (const bool pass_covered : {false, true})
      for (const auto j : free) {
        if (covered[j] != pass_covered) continue;  // each j is looked at in one pass only
        ++out.examined;
        if (j != i && sum + cost[j] <= budget) {
          set.push_back(j);
          sum += cost[j];
        }
      }
    for (const auto j : set) covered[j] = true;
    out.sets.push_back(std::move(set));
  }
}

}  // namespace

bool mask_before(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  auto i = a.rbegin();
  auto j = b.rbegin();
  for (; i != a.rend() && j != b.rend(); ++i, ++j)
    if (*i != *j) return *i < *j;
  return i == a.rend() && j != b.rend();
}

FittingSets maximal_fitting(const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& required,
                            std::uint64_t budget, bool one_more) {
  FittingSets out;
  std::vector<bool> is_required(cost.size(), false);
  std::uint64_t base = 0;
  for (const auto r : required) {
    if (r >= cost.size() || is_required[r]) continue;
    is_required[r] = true;
    base += cost[r];
  }
  if (base > budget) return out;
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < cost.size(); ++i)
    if (!is_required[i]) free.push_back(i);
  if (one_more) {
    for (const auto i : free) {
      ++out.examined;
      if (base + cost[i] <= budget) out.sets.push_back({i});
    }
  } else {
    auto order = free;  // biggest first: the bound cuts early, and a stopped walk kept the big ones
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
    Search(cost, std::move(order), base, budget, out).walk(0, kNone);
    if (out.truncated) cover_the_rest(cost, free, base, budget, out);
  }
  if (out.sets.empty() && !required.empty()) out.sets.emplace_back();
  for (auto& s : out.sets) {
    for (std::size_t r = 0; r < cost.size(); ++r)
      if (is_required[r]) s.push_back(r);
    std::sort(s.begin(), s.end());
  }
  out.sets.erase(std::remove_if(out.sets.begin(), out.sets.end(), [](const auto& s) { return s.empty(); }), out.sets.end());
  std::sort(out.sets.begin(), out.sets.end(), mask_before);
  return out;
}

}  // namespace kevlaya::ledger
