// GPU placement: which device(s) each profile's child uses, and what may be alive together on
// every device. Pure: the devices come in as values (NVML or gpu.devices, read by the runtime).
//
// Policy (docs/gpus.md): `gpu: N` / `gpu: [N, M]` are obeyed or refused; `auto` profiles, biggest
// first, go where they fit beside what is already placed (the device with the most room left),
// else rotate on the device that can hold them alone with the fewest children, else are split by
// layers over the fewest, largest devices that hold them together (proportions = device budgets),
// else are refused with a sentence. Each device then gets the single-GPU residency plan of
// make_plan; the machine's allowed sets are every combination of one allowed set per device, so
// the scheduler rotates each device on its own. A split child rotates alone on its devices.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ledger/plan.hpp"

namespace kevlaya::ledger {

struct Device {
  int index = 0;
  std::string name;
  std::string uuid;          // from NVML; empty for gpu.devices
  std::uint64_t total = 0;   // bytes
  std::uint64_t budget = 0;  // bytes the planner may fill: total minus gpu.reserve_mib
};

// Where one child lives: one device, or a layer split over several.
struct Placement {
  std::vector<int> devices;          // ascending
  std::vector<std::uint64_t> bytes;  // GPU memory the child takes on each device (parallel)
  bool split() const { return devices.size() > 1; }
};

// One device's part of the plan.
struct DevicePlan {
  Device device;
  std::vector<std::string> profiles;                   // placed here (a split profile on each of its devices)
  std::vector<std::vector<std::string>> allowed_sets;  // may be alive together on this device
  bool rotates() const { return allowed_sets.size() > 1; }
};

struct PlacedPlan {
  Plan plan;                                   // bills, groups, the machine's allowed sets, diagnostics
  std::vector<DevicePlan> devices;             // one per device, in device order
  std::map<std::string, Placement> placement;  // by profile name; refused profiles are absent
  const DevicePlan* device(int index) const;   // nullptr when unknown
};

// Places `in` on `devices` (opt.budget is ignored: each device has its own). No devices = the
// single-budget plan of make_plan(in, opt) with no placement.
PlacedPlan place(const std::vector<ProfileInput>& in, const std::vector<Device>& devices, const PlanOptions& opt);

// fit_host_ram (plan.hpp) on the machine's plan, then each device's allowed sets cut along the
// machine's, so the per-device view (check, plan, the startup line) says when a device rotates.
void fit_host_ram(PlacedPlan& pp, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                  config::Residency residency);

// GPU bytes of `bill` on each device when llama.cpp splits `p`'s layers in the proportions `ratio`
// (llama_model_base::load_tensors: layer i of the ngl offloaded goes to the first device whose
// cumulative share exceeds i/ngl; the output layer is the last). Weights and KV follow their
// layers; every device gets a whole compute buffer and the per-child overhead.
std::vector<std::uint64_t> split_bytes(const ProfileInput& p, const Bill& bill, const std::vector<double>& ratio);

// What the child of a placement is started with: CUDA_VISIBLE_DEVICES (UUIDs when every device has
// one, else indexes), and for a split --tensor-split (the devices' budgets in MiB, the ratio the
// planner priced) and --main-gpu (the device with the largest share).
config::DevicePlacement spawn_placement(const Placement& p, const std::vector<Device>& devices);

}  // namespace kevlaya::ledger
