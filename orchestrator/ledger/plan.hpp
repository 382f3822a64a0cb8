// Residency planner: which profiles may be alive together on the GPU, and which share one child
// (same base model, LoRA adapters selected per request). Pure: the budget comes in as a number.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ledger/ledger.hpp"

namespace kevlaya::ledger {

enum class Mode { co_resident, shared_base, rotate };

// A resident set leaving less than this share of the budget gets a warning (and fit_model keeps it free).
inline constexpr double kHeadroomWarn = 0.10;
std::string to_string(Mode m);

struct PlanOptions {
  std::uint64_t budget = 0;    // bytes: gpu.vram_mib (or NVML total) minus reserve_mib
  std::uint64_t overhead = 0;  // bytes per child: gpu.overhead_mib
  config::Residency residency = config::Residency::auto_;
};

// One {id, scale} of llama-server's per-request `lora` field: the one shape of a LoRA selection,
// from the plan to the child's request body.
struct LoraScale {
  int id = 0;
  double scale = 0;
  bool operator==(const LoraScale&) const = default;
};

// One child the plan runs, made once by the plan and run as it is by the supervisor: a profile
// alone, or several profiles sharing one base model (every member's adapters loaded at scale 0,
// ids = argv order; each member's requests select its own through the `lora` field).
struct ChildSpec {
  std::string name;                                      // its profile's, or shared_child_name(members)
  std::vector<std::string> members;                      // profile names, config order
  std::vector<AdapterInput> adapters;                    // union, in id order
  std::map<std::string, std::vector<LoraScale>> scales;  // shared: member -> its requests' `lora` field
  Bill bill;                                             // GPU bill with every adapter loaded (effective)
  std::uint64_t host_alone = 0;   // host RAM without a GPU: its largest member's host_bytes
  std::uint64_t host_beside = 0;  // host RAM beside a GPU: its largest member's host_part
  config::DevicePlacement placement;  // its GPUs, as the runtime placed it (empty: none, or the profile's own)
  // Set once it is bound to a configuration (bind_children, ledger/children.hpp): the settings its
  // process runs with and their config::child_key (a reload restarts the child when it changes).
  std::shared_ptr<const config::Profile> profile;
  std::string key;
  bool shared() const { return members.size() > 1; }
};

// A verdict on one profile, priced as if alone (with its own adapters).
struct ProfileBill {
  std::string name;
  Bill estimate;
  std::optional<Measured> measured;
  Bill effective;  // estimate with measured lines substituted; what decisions use
  bool fits_alone = true;
  std::string too_big;                  // the biggest bill line when it does not fit
  std::optional<int> suggest_ctx;       // largest ctx (multiple of 256) that fits at this ngl
  std::optional<int> suggest_ngl;       // largest ngl that fits at this ctx
};

// The child of `p` alone, priced by its verdict `b` (what the placement splits over devices).
ChildSpec child_alone(const ProfileInput& p, const ProfileBill& b);

// A set of children alive together.
struct SetBill {
  std::vector<std::string> profiles;  // every profile the set serves
  int device = -1;                    // the GPU it was priced for (placement); -1 = the one budget
  int children = 0;
  std::uint64_t total_gpu = 0;
  bool fits = false;
};

struct PlanDiagnostic {
  config::Severity severity = config::Severity::warning;
  std::string subject;  // profile name, or set "kev+laya"
  std::string message;
  bool pin = false;  // a pin that cannot be kept resident: serve refuses to start
};

struct Plan {
  Mode mode = Mode::rotate;
  std::uint64_t budget = 0;
  std::vector<ProfileBill> profiles;
  std::vector<ChildSpec> children;                       // every child; a refused profile has none
  std::vector<SetBill> sets;                             // priced: every combination up to 6 children, else the allowed sets
  std::size_t sets_examined = 0;                         // steps of every subset search (ledger/subsets.hpp): the work bound
  std::vector<std::vector<std::string>> allowed_sets;    // what the supervisor may keep alive together
  std::vector<PlanDiagnostic> diagnostics;
  bool ok() const;                                       // no error diagnostic (nothing refused)
  const ChildSpec* child_spec(const std::string& profile) const;  // nullptr = refused or unknown
  std::string child_of(const std::string& profile) const;        // its child's name, or the profile's
  std::vector<ChildSpec> shared_children() const;                // the children serving several profiles
};

// Decides the plan. Profiles that cannot fit alone are refused (error + suggestions) and left
// out of every allowed set.
Plan make_plan(const std::vector<ProfileInput>& profiles, const PlanOptions& opt);

// Host RAM one profile's child takes on a machine without a GPU: every line of its bill with no
// layer offloaded (llama-server falls back to the CPU), adapters included. Weights count in full
// (mapped from the file), so a model already in the page cache is counted again: conservative.
std::uint64_t host_bytes(const ProfileInput& p);

// Residency on a machine without a GPU budget, where host RAM is the limit. `need`: host_bytes of
// every profile together; `budget`: RAM the children may use (nullopt = unknown). rotate stays
// rotate; auto is co-resident when `need` fits, else rotate; co-resident stays co-resident (the
// config says so) and `warning` says when it does not fit.
inline constexpr std::int64_t kRamReserveMiB = 1024;  // MemAvailable kept free for everything else
struct RamResidency {
  config::Residency residency = config::Residency::rotate;
  std::string why;                     // for the startup summary
  std::optional<std::string> warning;  // co-resident asked for, more than the budget
  bool fits = false;                   // every profile fits in the budget together
};
RamResidency ram_residency(config::Residency wanted, std::uint64_t need, std::optional<std::uint64_t> budget);

// What a child priced by `b` keeps in host RAM beside a GPU: layers not offloaded, a CPU KV cache,
// CPU compute buffers.
std::uint64_t host_part(const Bill& b);

// The one naming rule of a shared base's child: its members joined with '+' ("kev+laya"). Switch
// records, logs, allowed sets and the ledger's per-child figures all use it.
std::string shared_child_name(const std::vector<std::string>& members);

// Host RAM each child of `plan` takes, by child name: without a GPU (`gpu` false) host_alone,
// beside one host_beside. What fit_host_ram sums and the supervisor checks.
std::map<std::string, std::uint64_t> child_host_bytes(const Plan& plan, bool gpu);

// `sets` without duplicates and without sets contained in another (the first of equal sets kept).
std::vector<std::vector<std::string>> maximal_sets(const std::vector<std::vector<std::string>>& sets);

// `sets` as the CLI and the startup line print them: "[kev, laya] [x]", or "none".
std::string format_sets(const std::vector<std::vector<std::string>>& sets);

// With a GPU budget, what each child keeps in host RAM (layers not offloaded, a CPU KV cache, CPU
// compute buffers) still adds up for children alive together. Every allowed set of two or more
// children that needs more than `budget` (host RAM, nullopt = unknown: nothing checked) is cut
// under `auto` into its largest subsets that fit (each holding the pins; a pin error for a child
// that fits beside no pins), and kept with a warning under `co-resident`. Each cut or kept set
// gets a diagnostic.
void fit_host_ram(Plan& plan, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                  config::Residency residency);

// Without a GPU, when host RAM does not hold every profile (or a pin under `residency: rotate`):
// each allowed set is cut into its `largest` subsets that fit `budget` by host_bytes, each holding
// the pins (not `largest`, or `budget` nullopt = unknown: the pins plus each other child); a pin
// error for pins, or a child beside them, over the budget. A child alone is always allowed.
void fit_sets_to_host_ram(Plan& plan, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                          bool largest);

// Two profiles may share one child: same model, same share_key, neither opted out.
bool can_share(const ProfileInput& a, const ProfileInput& b);
// share_key: config::fingerprint of its child but per-member words (LoRA, --alias), plus `gpu:`.
std::string share_key(const config::Profile& p);

}  // namespace kevlaya::ledger
