// The ledger's plan turned into supervisor options; see plan_setup.hpp.
#include "runtime/plan_setup.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>

#include "common/bounded_file.hpp"
#include "common/bytes.hpp"
#include "common/strings.hpp"
#include "config/backend.hpp"
#include "ledger/calibration.hpp"
#include "runtime/discovered.hpp"
#include "supervisor/child.hpp"
#include "supervisor/nvml.hpp"
#include "warm/page_cache.hpp"

namespace kevlaya::runtime {

namespace asio = boost::asio;
namespace {

namespace fs = std::filesystem;

// The load's buffer lines are near the end of the log when the child has just become ready.
constexpr std::uint64_t kLogTailBytes = 1 << 20;

std::string describe(const ledger::Plan& plan, const std::string& why) {
  std::string s = "residency: " + ledger::to_string(plan.mode) + (why.empty() ? "" : " (" + why + ")");
  std::vector<std::vector<std::string>> groups;
  for (const auto& c : plan.shared_children()) groups.push_back(c.members);
  return s + "; resident sets: " + ledger::format_sets(plan.allowed_sets) + "; shared base: " + ledger::format_sets(groups);
}

// Which measurement keys each child's load calibrates: child name -> (keys, shared-base child).
std::map<std::string, std::pair<std::vector<std::string>, bool>> calibration_keys(const ledger::Plan& plan,
                                                                                  const ledger::Gathered& g) {
  std::map<std::string, std::string> key_of;
  for (std::size_t i = 0; i < g.profiles.size() && i < g.keys.size(); ++i)
    if (!g.keys[i].empty()) key_of[g.profiles[i].name] = g.keys[i];
  std::map<std::string, std::pair<std::vector<std::string>, bool>> out;
  for (const auto& c : plan.children) {
    auto& entry = out[c.name];
    entry.second = c.shared();
    for (const auto& m : c.members)
      if (key_of.count(m)) entry.first.push_back(key_of[m]);
  }
  return out;
}

void attach_calibration(ResidencySetup& setup, const config::Config& cfg, const ledger::Plan& plan,
                        const ledger::Gathered& g) {
  if (cfg.orch.state_dir.empty() || cfg.orch.log_dir.empty()) return;
  auto keys = std::make_shared<const std::map<std::string, std::pair<std::vector<std::string>, bool>>>(
      calibration_keys(plan, g));
  // Recording reads the log tail, parses it and rewrites the store (~2 ms for a 1 MiB tail, more
  // under sanitizers): do it on one background thread, in order, so the switch that just finished
  // releases its waiting requests at once. The last owner of the callback waits for what is queued.
  struct Recorder {
    asio::thread_pool pool{1};
    ~Recorder() { pool.join(); }
  };
  auto recorder = std::make_shared<Recorder>();
  setup.options.on_ready = [keys, recorder, log_dir = cfg.orch.log_dir, state_dir = cfg.orch.state_dir](
                               const ledger::ChildSpec& child, const supervisor::StartReport&) {
    const auto it = keys->find(child.name);
    if (it == keys->end() || it->second.first.empty()) return;
    asio::post(recorder->pool, [name = child.name, entry = it->second, log_dir, state_dir] {
      const int n = record_child_load(supervisor::child_log_path(log_dir, name), state_dir, entry.first, entry.second);
      if (n > 0) spdlog::info("{}: recorded the load's measured buffer sizes ({} profile(s))", name, n);
    });
  };
}

}  // namespace

std::optional<std::uint64_t> host_ram_budget() {
  // Read once, before this process started any child: a reload plans with the same budget, not with
  // what the running children left (which would flip co-resident to rotate on every reload).
  static const std::optional<std::int64_t> avail = warm::mem_available_mib();
  if (!avail) return std::nullopt;  // known but under the reserve: a budget of 0, not "unknown"
  return static_cast<std::uint64_t>(std::max<std::int64_t>(*avail - ledger::kRamReserveMiB, 0)) * ledger::kMiB;
}

namespace {

// The residency host RAM allows for every gathered profile at once (docs/ledger.md, "No GPU").
ledger::RamResidency host_ram_residency(const config::Config& cfg, const ledger::Gathered& gathered) {
  std::uint64_t need = 0;
  for (const auto& p : gathered.profiles) need += ledger::host_bytes(p);
  return ledger::ram_residency(cfg.orch.residency, need, host_ram_budget());
}

}  // namespace

ledger::PlacedPlan place_on_gpus(const config::Config& cfg, const ledger::Gathered& gathered,
                                 const std::vector<ledger::Device>& devices, const ledger::PlanOptions& opt) {
  auto placed = ledger::place(gathered.profiles, devices, opt);
  if (!devices.empty()) ledger::fit_host_ram(placed, gathered.profiles, host_ram_budget(), cfg.orch.residency);
  return placed;
}

RamPlan plan_without_gpu(const config::Config& cfg, const ledger::Gathered& gathered) {
  RamPlan out;
  out.verdict = host_ram_residency(cfg, gathered);
  auto opt = ledger::plan_options(cfg.orch, std::numeric_limits<std::uint64_t>::max());
  // Host RAM cuts the plan into the largest groups that fit when `auto` cannot keep everything
  // (budget known), and around a pin under `rotate` or with RAM unknown (pins plus each other).
  const auto budget = host_ram_budget();
  const bool cut = out.verdict.residency == config::Residency::rotate &&
                   (std::any_of(cfg.profiles.begin(), cfg.profiles.end(), [](const auto& p) { return p.pin; }) ||
                    (budget && cfg.orch.residency == config::Residency::auto_));
  opt.residency = cut ? config::Residency::co_resident : out.verdict.residency;
  out.plan = ledger::make_plan(gathered.profiles, opt);
  if (cut) ledger::fit_sets_to_host_ram(out.plan, gathered.profiles, budget, cfg.orch.residency != config::Residency::rotate);
  return out;
}

supervisor::SupervisorOptions options_from_plan(const ledger::Plan& plan) {
  supervisor::SupervisorOptions o;
  std::map<std::string, std::string> child_of;  // member -> its child's name: one lookup per name
  for (const auto& c : plan.children)
    for (const auto& m : c.members) child_of.emplace(m, c.name);
  for (const auto& set : plan.allowed_sets) {  // in child names: a group's members stand for its child
    std::vector<std::string> children;
    std::set<std::string> seen;
    for (const auto& name : set) {
      const auto it = child_of.find(name);
      auto child = it != child_of.end() ? it->second : plan.child_of(name);
      if (seen.insert(child).second) children.push_back(std::move(child));
    }
    o.allowed_sets.push_back(std::move(children));
  }
  o.children = plan.children;
  return o;
}

int record_child_load(const fs::path& log_file, const fs::path& state_dir, const std::vector<std::string>& keys,
                      bool shared) {
  ledger::Measured m = ledger::parse_log(read_file_tail(log_file, 0, kLogTailBytes));
  if (m.empty()) return 0;
  if (shared) {  // the group's child loads every member's adapters; alone each loads its own
    m.adapters_gpu.reset();
    m.adapters_cpu.reset();
  }
  int n = 0;
  for (const auto& key : keys) {
    if (auto st = ledger::record_measurement(state_dir, key, m); st) {
      ++n;
    } else {
      spdlog::warn("calibration not recorded: {}", st.error().message);
    }
  }
  return n;
}

std::vector<ledger::Device> gpu_devices(const config::Config& cfg, std::optional<std::int64_t> override_mib) {
  std::vector<ledger::Device> detected;
  if (!override_mib && cfg.orch.gpu.devices.empty() && !cfg.orch.gpu.vram_mib) {  // `auto`: ask the driver
    for (const auto& d : supervisor::nvml::devices())
      detected.push_back(ledger::Device{static_cast<int>(d.index), d.name, d.uuid, d.memory.total, 0});
  }
  return ledger::plan_devices(cfg.orch.gpu, override_mib, std::move(detected));
}

namespace {

// Without a device list nothing is planned, but a profile's `gpu:` is still obeyed: its child sees
// those devices (a list is split by llama.cpp itself, in the ratio of their free memory).
std::map<std::string, config::DevicePlacement> unplanned(const config::Config& cfg) {
  std::map<std::string, config::DevicePlacement> out;
  for (const auto& p : cfg.profiles) {
    if (p.gpu.empty() || !config::backend_of(p).llama_server) continue;
    auto& d = out[p.name];
    d.devices = p.gpu;
    for (const int g : p.gpu) d.visible += (d.visible.empty() ? "" : ",") + std::to_string(g);
  }
  return out;
}

}  // namespace

std::map<std::string, config::DevicePlacement> placements(const config::Config& cfg) {
  std::map<std::string, config::DevicePlacement> out;
  const auto devices = gpu_devices(cfg);
  if (devices.empty()) return unplanned(cfg);
  auto gathered = ledger::gather(cfg);
  if (!gathered) return out;
  const auto placed = ledger::place(gathered->profiles, devices, ledger::plan_options(cfg.orch, 0));
  for (const auto& [name, p] : placed.placement) out[name] = ledger::spawn_placement(p, devices);
  return out;
}

void apply_placements(config::Config& cfg, const ResidencySetup& setup) {
  for (auto& p : cfg.profiles) {
    const auto it = setup.placements.find(p.name);
    p.placement = it != setup.placements.end() ? it->second : config::DevicePlacement{};
  }
}

Result<ResidencySetup> plan_and_place(config::Config& cfg) {
  auto fits = fit_discovered(cfg, gpu_devices(cfg));
  if (!fits) return fits.error();
  for (const auto& f : *fits)
    spdlog::info("models_dir: {} ({}): {}: {}", f.profile, printable(f.model), ledger::to_string(f.choice), f.choice.why);
  auto setup = setup_residency(cfg);
  if (setup.refused) return *setup.refused;
  return setup;
}

namespace {

// The machine's plan: on the GPUs (each budget named in `why`), or without any, by host RAM.
struct MachinePlan {
  ledger::PlacedPlan placed;
  std::string why;                         // for the startup summary
  std::optional<std::string> ram_warning;  // co-resident asked for beyond host RAM
};
MachinePlan plan_machine(const config::Config& cfg, const std::vector<ledger::Device>& devices,
                         const ledger::Gathered& gathered) {
  MachinePlan m;
  if (devices.empty()) {
    auto ram = plan_without_gpu(cfg, gathered);
    m.placed.plan = std::move(ram.plan);
    m.why = std::move(ram.verdict.why);
    m.ram_warning = std::move(ram.verdict.warning);
    return m;
  }
  for (const auto& d : devices)
    m.why += (m.why.empty() ? "" : ", ") + ("gpu " + std::to_string(d.index) + " budget " + ledger::format_mib(d.budget) + " MiB");
  m.placed = place_on_gpus(cfg, gathered, devices, ledger::plan_options(cfg.orch, std::numeric_limits<std::uint64_t>::max()));
  return m;
}

// Each child's placement (its first member's: members share one), and a lone, unpriced child for
// each placed profile the plan has none for, so that it runs on its devices too.
void place_children(std::vector<ledger::ChildSpec>& children, const std::map<std::string, config::DevicePlacement>& placements) {
  std::set<std::string> served;
  for (auto& c : children) {
    served.insert(c.members.begin(), c.members.end());
    if (const auto it = placements.find(c.members.front()); it != placements.end()) c.placement = it->second;
  }
  for (const auto& [name, p] : placements) {
    if (served.count(name)) continue;
    ledger::ChildSpec alone;
    alone.name = name;
    alone.members = {name};
    alone.placement = p;
    children.push_back(std::move(alone));
  }
}

}  // namespace

ResidencySetup setup_residency(const config::Config& cfg) {
  ResidencySetup setup;
  auto gathered = ledger::gather(cfg);
  if (!gathered && gathered.error().code == Errc::config_invalid) {
    setup.refused = gathered.error();
    setup.summary = "residency: refused: " + printable(gathered.error().message);
    spdlog::error("{}", setup.summary);
    return setup;
  }
  if (!gathered) {
    setup.unread = gathered.error();
    setup.summary = "residency: rotate (the ledger could not read a model: " + printable(gathered.error().message) + ")";
    spdlog::warn("{}", setup.summary);
    return setup;
  }
  setup.devices = gpu_devices(cfg);
  const auto [placed, why, ram_warning] = plan_machine(cfg, setup.devices, *gathered);
  const auto& plan = placed.plan;
  setup.options = options_from_plan(plan);
  for (const auto& d : setup.devices)
    setup.options.devices.push_back({d.index, d.name, static_cast<std::int64_t>(d.total / ledger::kMiB)});
  for (const auto& [name, p] : placed.placement) setup.placements[name] = ledger::spawn_placement(p, setup.devices);
  if (setup.devices.empty()) setup.placements = unplanned(cfg);
  place_children(setup.options.children, setup.placements);
  setup.mode = plan.mode;
  attach_calibration(setup, cfg, plan, *gathered);
  setup.summary = describe(plan, why);
  for (const auto& d : placed.devices) {
    setup.summary += "; gpu " + std::to_string(d.device.index) + ": " + (d.profiles.empty() ? "-" : join(d.profiles, ", ")) +
                     (d.rotates() ? " (rotate)" : "");
  }
  // Serve refuses what check and plan refuse: a pin the ledger cannot keep resident, and, with a
  // GPU budget, every error of the plan (a profile that cannot fit even alone, a missing gpu).
  for (const auto& d : plan.diagnostics) {
    const bool refuses = d.pin || (!setup.devices.empty() && d.severity == config::Severity::error);
    if (!refuses || setup.refused) continue;
    setup.refused = make_error(Errc::config_invalid, (d.pin ? "pin: " : "") + d.subject + ": " + d.message);
    spdlog::error("residency: refused: {}", setup.refused->message);
  }
  if (setup.refused) return setup;
  spdlog::info("{}", setup.summary);
  if (ram_warning) {
    setup.warnings.push_back(*ram_warning);
    spdlog::warn("plan: {}", *ram_warning);
  }
  setup.plan = plan;
  for (const auto& d : plan.diagnostics) {
    if (setup.devices.empty()) continue;  // without a budget every "fits" verdict is meaningless
    setup.warnings.push_back(d.subject + ": " + d.message);
    spdlog::warn("plan: {}: {}", d.subject, d.message);
  }
  return setup;
}

}  // namespace kevlaya::runtime
