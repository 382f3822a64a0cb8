// The VRAM ledger wired into the running product: from a loaded Config to the supervisor's
// allowed resident sets and shared-base groups, plus calibration of every child's load.
// Used by runtime::Runtime, so `serve`, `up`, `run` and `eval` all follow the plan `kevlaya-orch
// plan` prints; gpu_devices() is the one place the GPUs planned for are found (plan and check too).
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ledger/inputs.hpp"
#include "ledger/plan.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::runtime {

struct ResidencySetup {
  supervisor::SupervisorOptions options;  // allowed_sets, children, on_ready (calibration), devices
  ledger::Mode mode = ledger::Mode::rotate;
  std::string summary;                    // one line for the startup log
  std::vector<std::string> warnings;      // plan diagnostics, "subject: message"
  std::optional<Error> refused;           // an adapter incompatible with its base: do not spawn
  std::optional<Error> unread;            // a model the ledger could not read (the plan fell back to rotate)
  std::optional<ledger::Plan> plan;       // the plan followed, moved into the snapshot (ledger/snapshot.hpp)
  std::vector<ledger::Device> devices;    // the GPUs planned for (empty = none known)
  std::map<std::string, config::DevicePlacement> placements;  // by profile; each child's is in options.children
};

// The GPUs to plan with (ledger::plan_devices): --vram-mib, gpu.devices, gpu.vram_mib, else NVML.
std::vector<ledger::Device> gpu_devices(const config::Config& cfg, std::optional<std::int64_t> override_mib = {});

// Each profile's placement as setup_residency decides it (reads the models, asks NVML), without
// logging or calibration; empty when a model cannot be read. With no device known, only the
// profiles with a `gpu:` get one (those devices, unplanned).
std::map<std::string, config::DevicePlacement> placements(const config::Config& cfg);

// Writes each profile's placement into `cfg` (Profile::placement), for commands that print what a
// child would run (check). The running product places children, not the configuration
// (ledger::ChildSpec::placement). Profiles without one keep an empty placement.
void apply_placements(config::Config& cfg, const ResidencySetup& setup);

// Plans residency for `cfg` (budgets: gpu_devices(); none known = one child at a time, shared-base
// groups still apply) and records each child's load for calibration (the child logs its buffer
// sizes at -lv 4, see build_argv). A ledger error other than a refusal falls back to rotate; a
// refusal (an adapter incompatible with its base) is `refused`: nothing may be spawned.
ResidencySetup setup_residency(const config::Config& cfg);

// fit_discovered (models_dir), then setup_residency: the one planning step of a start (Runtime::open)
// and of a reload. Errors: the plan's refusal (nothing may be spawned).
Result<ResidencySetup> plan_and_place(config::Config& cfg);

// Host RAM the children may take: MemAvailable (cgroup limit included) at the first call, less
// ledger::kRamReserveMiB; nullopt when unknown.
std::optional<std::uint64_t> host_ram_budget();
// With GPUs: ledger::place, then the allowed sets checked against host RAM (ledger::fit_host_ram).
// The plan serve, up, run, eval, plan and check all use.
ledger::PlacedPlan place_on_gpus(const config::Config& cfg, const ledger::Gathered& gathered,
                                 const std::vector<ledger::Device>& devices, const ledger::PlanOptions& opt);
// Without a GPU budget: host RAM's verdict and the plan it gives: co-resident when RAM holds every
// profile, else the largest groups that fit take turns (a pin in each; ledger::fit_sets_to_host_ram),
// or one at a time under `rotate`. What serve, up, run, eval, plan and check all use.
struct RamPlan {
  ledger::RamResidency verdict;
  ledger::Plan plan;
};
RamPlan plan_without_gpu(const config::Config& cfg, const ledger::Gathered& gathered);

// Supervisor options for a plan (pure): its allowed sets in child names, and its children.
supervisor::SupervisorOptions options_from_plan(const ledger::Plan& plan);

// Records the buffer sizes a child logged at its last load (read from the tail of `log_file`)
// under `keys`, the measurement keys of the profiles it serves; a shared-base child (`shared`)
// leaves the adapters line to the estimate, as each member loads fewer adapters alone.
// Returns how many keys were recorded: 0 when the log has no buffer lines or the store failed.
int record_child_load(const std::filesystem::path& log_file, const std::filesystem::path& state_dir,
                      const std::vector<std::string>& keys, bool shared);

}  // namespace kevlaya::runtime
