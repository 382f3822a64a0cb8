// models_dir profiles get their ngl, ctx and parallel here, from the ledger (ledger/fit.hpp), on
// the GPUs planned for (the largest one's budget), else host RAM. Every command that plans runs it
// first: serve and reload (plan_and_place), plan, check and init, so they all show the same choice.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ledger/fit.hpp"
#include "ledger/placement.hpp"

namespace kevlaya::runtime {

struct DiscoveredFit {
  std::string profile;
  std::string model;  // file, for messages
  ledger::FitChoice choice;
};

// Writes ngl, ctx and parallel into every discovered profile of `cfg` (profiles of one model file
// share one choice, priced with the largest set of adapters among them, so they can share a child).
// `devices` empty: host RAM (host_ram_budget) decides; unknown RAM: min(trained, 4096), all layers.
// Errors: a model file the ledger cannot read.
Result<std::vector<DiscoveredFit>> fit_discovered(config::Config& cfg, const std::vector<ledger::Device>& devices);

}  // namespace kevlaya::runtime
