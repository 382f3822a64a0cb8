// What kevlaya-orch knows of a remote profile's server (backend: remote): plain values, no asio.
// The Monitor (monitor.hpp) owns them; /status, /v1/models, metrics and events show them.
#pragma once
#include <chrono>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace kevlaya::remote {

enum class State { unknown, reachable, unreachable };  // unknown: before the first check ends
std::string_view to_string(State s);                    // "unknown", "reachable", "unreachable"

struct Health {
  std::string url;
  State state = State::unknown;
  std::string last_error;        // cause of the last failed check or call ("" once one succeeds)
  std::string checked_path;      // "/health", or "/v1/models" when the remote has no /health
  int failures = 0;              // consecutive failed checks
  std::chrono::steady_clock::time_point next_check{};
};

}  // namespace kevlaya::remote
