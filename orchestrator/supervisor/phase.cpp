#include "supervisor/phase.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace kevlaya::supervisor {

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::stopped: return "stopped";
    case Phase::starting: return "starting";
    case Phase::ready: return "ready";
    case Phase::draining: return "draining";
    case Phase::stopping: return "stopping";
    case Phase::failed: return "failed";
  }
  return "?";
}

bool transition_allowed(Phase from, Phase to) {
  using P = Phase;
  if (from == to) return true;
  switch (from) {
    case P::stopped: return to == P::starting;
    case P::starting: return to == P::ready || to == P::failed || to == P::stopping;
    case P::ready: return to == P::draining || to == P::stopping;
    case P::draining: return to == P::stopping;
    case P::stopping: return to == P::stopped || to == P::failed;
    case P::failed: return to == P::starting || to == P::stopped;
  }
  return false;
}

Phase checked_transition(Phase from, Phase to, std::string_view child) {
  if (!transition_allowed(from, to)) {
    spdlog::critical("{}: bad phase transition {} -> {} (a bug)", child, to_string(from), to_string(to));
#ifndef NDEBUG
    std::abort();
#endif
  }
  return to;
}

bool is_alive(Phase p) {
  return p == Phase::starting || p == Phase::ready || p == Phase::draining || p == Phase::stopping;
}

}  // namespace kevlaya::supervisor
