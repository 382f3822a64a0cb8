// The VRAM ledger wired into the running product: from a loaded Config to the supervisor's
// allowed resident sets and shared-base groups, plus calibration of every child's load.
// Shared by `serve`, `up`, `run` and `eval`, so they all follow the plan `kevlaya-orch plan` prints.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ledger/inputs.hpp"
#include "ledger/plan.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::cli {

struct ResidencySetup {
  supervisor::SupervisorOptions options;  // allowed_sets, shared_bases, on_ready (calibration)
  ledger::Mode mode = ledger::Mode::rotate;
  std::string summary;                    // one line for the startup log
  std::vector<std::string> warnings;      // plan diagnostics, "subject: message"
  std::optional<Error> refused;           // an adapter incompatible with its base: do not spawn
};

// Plans residency for `cfg` (budget: gpu.vram_mib, else NVML; unknown = one child at a time,
// shared-base groups still apply) and adds `-lv 4` to local llama-server profiles so each load
// logs its buffer sizes for calibration. Never fails: a ledger error falls back to rotate.
ResidencySetup setup_residency(config::Config& cfg);

// Supervisor options for a plan (pure): allowed sets, and one SharedBase per plan group.
supervisor::SupervisorOptions options_from_plan(const ledger::Plan& plan);

// Records the buffer sizes a child logged at its last load (read from the tail of `log_file`)
// under `keys`, the measurement keys of the profiles it serves; a shared-base child (`shared`)
// leaves the adapters line to the estimate, as each member loads fewer adapters alone.
// Returns how many keys were recorded: 0 when the log has no buffer lines or the store failed.
int record_child_load(const std::filesystem::path& log_file, const std::filesystem::path& state_dir,
                      const std::vector<std::string>& keys, bool shared);

}  // namespace kevlaya::cli
