// From a loaded Config to the ledger's inputs: reads each profile's GGUF (and its adapters),
// checks adapters against their base, attaches stored measurements. The only file IO of the
// planning path; `make_plan` itself stays pure.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ledger/placement.hpp"
#include "ledger/plan.hpp"

namespace kevlaya::ledger {

struct Gathered {
  std::vector<ProfileInput> profiles;  // llama_server profiles, config order
  std::vector<std::string> skipped;    // profiles the ledger cannot price (remote, command)
  std::vector<std::string> keys;       // measurement key per profile (same order)
};

// Reads every llama_server profile's model and adapters. A missing or bad file, or an
// incompatible adapter, is an error naming the profile and the file.
Result<Gathered> gather(const config::Config& cfg);

// The GPUs to plan with, each budget its memory minus gpu.reserve_mib: `override_mib` (--vram-mib:
// one device), else gpu.devices, else gpu.vram_mib (one device), else `detected` (NVML, passed in
// by the caller; their budgets are filled here). Empty when nothing is known.
std::vector<Device> plan_devices(const config::GpuCfg& gpu, std::optional<std::int64_t> override_mib,
                                 std::vector<Device> detected);

// Plan options from the orchestrator config and a budget.
PlanOptions plan_options(const config::OrchestratorCfg& orch, std::uint64_t budget);

}  // namespace kevlaya::ledger
