// Shared helpers of the benchmarks: milliseconds of a duration, median of samples.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace kevlaya::bench {

inline double ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Upper median (0 for no samples): robust against the outliers a shared machine produces.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace kevlaya::bench
