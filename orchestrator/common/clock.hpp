// "Time since" on the steady clock, in the units the project reports: whole milliseconds for
// records and headers, fractional milliseconds or seconds for metrics and summaries.
#pragma once
#include <chrono>
#include <cstdint>

namespace kevlaya {

using SteadyClock = std::chrono::steady_clock;

// Whole milliseconds of a duration (truncated).
inline std::int64_t whole_ms(SteadyClock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
// Whole milliseconds from `a` to `b` (truncated; negative when b is before a).
inline std::int64_t ms_between(SteadyClock::time_point a, SteadyClock::time_point b) { return whole_ms(b - a); }
// Whole milliseconds from `t` to now.
inline std::int64_t ms_since(SteadyClock::time_point t) { return ms_between(t, SteadyClock::now()); }
// Fractional milliseconds from `t` to now.
inline double fractional_ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}
// Fractional seconds from `t` to now.
inline double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

}  // namespace kevlaya
