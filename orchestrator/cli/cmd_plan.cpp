// `plan [CONFIG] [--json] [--vram-mib N]`: the VRAM ledger of every profile and resident set,
// and the residency plan the supervisor will follow. Exit 1 when a profile cannot fit.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#include "common/bytes.hpp"
#include "common/strings.hpp"
#include "config/config.hpp"
#include "ledger/calibration.hpp"
#include "ledger/inputs.hpp"
#include "ledger/placement.hpp"
#include "ledger/plan.hpp"
#include "runtime/discovered.hpp"
#include "runtime/plan_setup.hpp"
#include "warm/page_cache.hpp"

namespace kevlaya::cli {
namespace {

using ledger::Bill;
using ledger::format_mib;
using nlohmann::json;

struct PlanArgs {
  std::string config;
  std::string models_dir;
  bool json = false;
  std::optional<std::int64_t> vram_mib;
};

std::string opt_mib(const std::optional<std::uint64_t>& v) { return v ? format_mib(*v) : "-"; }

std::string row(const std::string& name, const std::string& layers, const std::string& ctx,
                const std::vector<std::string>& cells, const std::string& verdict) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-14s %7s %6s", name.c_str(), layers.c_str(), ctx.c_str());
  std::string s = buf;
  for (const auto& c : cells) {
    std::snprintf(buf, sizeof buf, " %9s", c.c_str());
    s += buf;
  }
  return s + "  " + verdict;
}

std::string verdict(std::uint64_t total, std::uint64_t budget) {
  if (total > budget) return "NO (over by " + format_mib(total - budget) + " MiB)";
  return "yes (" + std::to_string(static_cast<int>(100.0 * static_cast<double>(budget - total) /
                                                     static_cast<double>(budget ? budget : 1))) +
         "% headroom)";
}

std::vector<std::string> bill_cells(const Bill& b) {
  return {format_mib(b.weights_gpu), format_mib(b.kv_gpu), format_mib(b.compute_gpu),
          format_mib(b.overhead_gpu), format_mib(b.adapters_gpu), format_mib(b.total_gpu())};
}

void print_profiles(const ledger::Plan& plan) {
  std::cout << row("profile", "layers", "ctx", {"weights", "KV", "compute", "overhead", "adapters", "total"}, "fits?")
            << "\n";
  for (const auto& p : plan.profiles) {
    const auto& e = p.estimate;
    const std::string off = std::to_string(e.offload.reported) + "/" + std::to_string(e.offload.total);
    const bool over = p.effective.total_gpu() > plan.budget;
    const std::string v = p.fits_alone && over ? "yes, split over GPUs"       // placement: see GPUs
                          : !p.fits_alone && !over ? "NO (see the error below)"  // e.g. gpu: N too small
                                                   : verdict(p.effective.total_gpu(), plan.budget);
    std::cout << row(p.name, off, std::to_string(e.kv.n_ctx), bill_cells(e), v + (p.measured ? " (measured)" : ""))
              << "\n";
    if (p.measured) {
      const auto& m = *p.measured;
      std::cout << row("  measured", m.layers_offloaded ? std::to_string(*m.layers_offloaded) : "-", "",
                       {opt_mib(m.weights_gpu), opt_mib(m.kv_gpu), opt_mib(m.compute_gpu), "", opt_mib(m.adapters_gpu),
                        format_mib(p.effective.total_gpu())},
                       "")
                << "\n";
    }
  }
}

std::string gpu_label(const ledger::Device& d) {
  return "gpu " + std::to_string(d.index) + (d.name.empty() ? "" : " (" + d.name + ")");
}

// Each device, what is placed on it, and which of its children take turns.
void print_devices(const ledger::PlacedPlan& pp) {
  std::cout << "\nGPUs:\n";
  for (const auto& d : pp.devices) {
    std::cout << "  " << gpu_label(d.device) << ": " << format_mib(d.device.total) << " MiB, budget "
              << format_mib(d.device.budget) << " MiB: ";
    if (d.profiles.empty()) std::cout << "nothing placed";
    for (std::size_t i = 0; i < d.allowed_sets.size(); ++i)
      std::cout << (i ? " | " : "") << join(d.allowed_sets[i], " + ");
    std::cout << (d.rotates() ? "  (rotates: one set at a time)" : d.profiles.empty() ? "" : "  (stays loaded)") << "\n";
  }
  for (const auto& [name, p] : pp.placement) {
    if (!p.split()) continue;
    std::cout << "  " << name << " is split over gpu "
              << join(p.devices, "+", [](int x) { return std::to_string(x); }) << ":";
    for (std::size_t k = 0; k < p.bytes.size(); ++k) std::cout << (k ? " +" : "") << " " << format_mib(p.bytes[k]);
    std::cout << " MiB (--tensor-split in the ratio of the budgets)\n";
  }
}

void print_plan(const ledger::PlacedPlan& pp, const ledger::Gathered& g) {
  const auto& plan = pp.plan;
  const bool multi = pp.devices.size() > 1;
  std::cout << "GPU budget: " << format_mib(plan.budget) << " MiB" << (multi ? " (the largest GPU)" : "")
            << " (MiB below; GPU side only)\n\n";
  print_profiles(plan);
  for (const auto& s : plan.sets) {
    const std::string where = multi && s.device >= 0 ? " @gpu" + std::to_string(s.device) : "";
    const std::uint64_t budget = multi && pp.device(s.device) ? pp.device(s.device)->device.budget : plan.budget;
    std::cout << row("set " + join(s.profiles, "+") + where, std::to_string(s.children) + " ch", "",
                     {"", "", "", "", "", format_mib(s.total_gpu)}, verdict(s.total_gpu, budget))
              << "\n";
  }
  print_devices(pp);
  std::cout << "\nmode: " << ledger::to_string(plan.mode) << "\nallowed resident sets: " << ledger::format_sets(plan.allowed_sets);
  const auto groups = plan.shared_children();
  std::cout << "\nshared-base groups:" << (groups.empty() ? " none" : "") << "\n";
  for (const auto& gr : groups) {
    std::cout << "  [" << join(gr.members, ", ") << "] one child, adapters:";
    for (std::size_t i = 0; i < gr.adapters.size(); ++i) std::cout << " " << i << "=" << gr.adapters[i].name;
    std::cout << "\n";
    for (const auto& [member, scales] : gr.scales) {
      std::cout << "    " << member << " sends lora:";
      for (const auto& s : scales) std::cout << " {id " << s.id << ", scale " << s.scale << "}";
      std::cout << "\n";
    }
  }
  for (const auto& name : g.skipped) std::cout << "not priced (not a local llama-server model): " << name << "\n";
  for (const auto& d : plan.diagnostics) {
    std::cout << (d.severity == config::Severity::error ? "error: " : "warning: ") << d.subject << ": " << d.message
              << "\n";
  }
}

json bill_json(const Bill& b) {
  return {{"weights_gpu", b.weights_gpu}, {"weights_cpu", b.weights_cpu}, {"kv_gpu", b.kv_gpu},
          {"kv_cpu", b.kv_cpu},           {"compute_gpu", b.compute_gpu}, {"compute_cpu", b.compute_cpu},
          {"overhead_gpu", b.overhead_gpu}, {"adapters_gpu", b.adapters_gpu}, {"total_gpu", b.total_gpu()},
          {"layers_offloaded", b.offload.reported}, {"n_ctx", b.kv.n_ctx}, {"n_ctx_seq", b.kv.n_ctx_seq}};
}

json profile_json(const ledger::ProfileBill& p) {
  json j = {{"name", p.name}, {"fits_alone", p.fits_alone}, {"estimate", bill_json(p.estimate)},
            {"effective", bill_json(p.effective)},
            {"measured", p.measured ? ledger::measured_to_json(*p.measured) : json(nullptr)}};
  if (!p.fits_alone) j["too_big"] = p.too_big;
  j["suggest_ctx"] = p.suggest_ctx ? json(*p.suggest_ctx) : json(nullptr);
  j["suggest_ngl"] = p.suggest_ngl ? json(*p.suggest_ngl) : json(nullptr);
  return j;
}

json group_json(const ledger::ChildSpec& g) {
  json adapters = json::array();
  for (std::size_t i = 0; i < g.adapters.size(); ++i)
    adapters.push_back({{"id", i}, {"name", g.adapters[i].name}, {"path", g.adapters[i].path}});
  json scales = json::object();
  for (const auto& [member, list] : g.scales) {
    scales[member] = json::array();
    for (const auto& s : list) scales[member].push_back({{"id", s.id}, {"scale", s.scale}});
  }
  return {{"child", g.name}, {"members", g.members}, {"adapters", adapters}, {"lora", scales}};
}

json devices_json(const ledger::PlacedPlan& pp) {
  json out = json::array();
  for (const auto& d : pp.devices) {
    out.push_back({{"index", d.device.index}, {"name", d.device.name}, {"uuid", d.device.uuid},
                   {"vram_mib", d.device.total / ledger::kMiB}, {"budget", d.device.budget},
                   {"profiles", d.profiles}, {"allowed_sets", d.allowed_sets}, {"rotates", d.rotates()}});
  }
  return out;
}

json plan_json(const ledger::PlacedPlan& pp, const ledger::Gathered& g) {
  const auto& plan = pp.plan;
  json j = {{"budget", plan.budget}, {"mode", ledger::to_string(plan.mode)}, {"ok", plan.ok()},
            {"allowed_sets", plan.allowed_sets}, {"skipped", g.skipped}, {"devices", devices_json(pp)}};
  j["placement"] = json::object();
  for (const auto& [name, p] : pp.placement) j["placement"][name] = {{"gpus", p.devices}, {"bytes", p.bytes}};
  j["profiles"] = json::array();
  for (const auto& p : plan.profiles) j["profiles"].push_back(profile_json(p));
  j["sets"] = json::array();
  for (const auto& s : plan.sets) {
    j["sets"].push_back({{"profiles", s.profiles}, {"children", s.children}, {"total_gpu", s.total_gpu},
                         {"fits", s.fits}, {"gpu", s.device}});
  }
  j["groups"] = json::array();
  for (const auto& gr : plan.shared_children()) j["groups"].push_back(group_json(gr));
  j["diagnostics"] = json::array();
  for (const auto& d : plan.diagnostics) {
    j["diagnostics"].push_back({{"severity", d.severity == config::Severity::error ? "error" : "warning"},
                                {"subject", d.subject}, {"message", d.message}});
  }
  return j;
}

config::LoadResult load_config(const std::string& path, const std::string& models_dir) {
  if (path.empty()) return config::load(config::Source{config::fs::exists("kevlaya.yaml") ? "kevlaya.yaml" : "", models_dir});
  if (config::fs::is_directory(path)) return config::load(config::Source{config::fs::path(path) / "kevlaya.yaml", models_dir});
  return config::load(config::Source{path, models_dir});
}

// Why each models_dir profile got its ngl, ctx and parallel.
void print_fits(const std::vector<runtime::DiscoveredFit>& fits) {
  if (fits.empty()) return;
  std::cout << "models_dir (each model fitted alone to the budget):\n";
  for (const auto& f : fits)
    std::cout << "  " << f.profile << ": " << ledger::to_string(f.choice) << ": " << f.choice.why << "  (" << f.model
              << ")\n";
  std::cout << "\n";
}

json fits_json(const std::vector<runtime::DiscoveredFit>& fits) {
  json j = json::array();
  for (const auto& f : fits)
    j.push_back({{"profile", f.profile}, {"model", f.model}, {"ngl", f.choice.ngl}, {"ctx", f.choice.ctx},
                 {"parallel", f.choice.parallel}, {"fits", f.choice.fits}, {"why", f.choice.why}});
  return j;
}

// How much of each profile's model file is in the OS page cache (docs/warm.md): a cold file makes
// the next start pay for the disk. -1 = unreadable.
json page_cache_json(const config::Config& cfg) {
  json j = json::object();
  for (const auto& p : cfg.profiles)
    if (!p.model.empty()) j[p.name] = warm::resident_pct(p.model);
  return j;
}

// Who may be evicted and when (docs/supervisor.md, "Cost-aware eviction").
json evict_json(const config::Config& cfg) {
  json j = json::object();
  for (const auto& p : cfg.profiles)
    j[p.name] = {{"policy", p.evict.protect ? "protect" : "normal"}, {"idle_s", p.evict.idle_s},
                 {"max_wait_s", p.evict.max_wait_s}};
  return j;
}

void print_eviction(const config::Config& cfg) {
  std::cout << "\neviction (when a set must make room: the cheapest to reload goes; protected children wait):\n";
  for (const auto& p : cfg.profiles) std::cout << "  " << p.name << ": " << config::evict_text(p.evict) << "\n";
}

void print_page_cache(const config::Config& cfg) {
  std::cout << "\npage cache (share of each model file in RAM; the prefetcher warms the next one):\n";
  for (const auto& p : cfg.profiles) {
    if (p.model.empty()) continue;
    const double pct = warm::resident_pct(p.model);
    char cell[32] = "unreadable";
    if (pct >= 0) std::snprintf(cell, sizeof cell, "%.0f %%", pct);
    std::cout << "  " << p.name << ": " << cell << "  " << p.model.string() << "\n";
  }
}

int run_plan(const PlanArgs& a) {
  auto loaded = load_config(a.config, a.models_dir);
  for (const auto& d : loaded.diagnostics) std::cerr << d.format() << '\n';
  if (!loaded.ok()) return kExitFailure;
  auto& cfg = loaded.config;
  const auto devices = runtime::gpu_devices(cfg, a.vram_mib);
  const auto fits = runtime::fit_discovered(cfg, devices);
  if (!fits) {
    std::cerr << "kevlaya-orch plan: " << fits.error().message << '\n';
    return kExitFailure;
  }
  auto gathered = ledger::gather(cfg);
  if (devices.empty()) {
    std::cerr << "kevlaya-orch plan: gpu.vram_mib is auto and no NVIDIA GPU answered; pass --vram-mib N "
                 "or list the GPUs under gpu.devices\n";
    if (gathered) {  // what serve does then: host RAM decides
      const auto ram = runtime::plan_without_gpu(cfg, *gathered);
      std::cerr << "  without them, serve runs " << config::to_string(ram.verdict.residency) << " by host RAM: " << ram.verdict.why
                << "; resident sets: " << ledger::format_sets(ram.plan.allowed_sets) << '\n';
    }
    return kExitFailure;
  }
  if (!gathered) return fail_with("plan", gathered.error());
  const auto pp = runtime::place_on_gpus(cfg, *gathered, devices, ledger::plan_options(cfg.orch, 0));
  const auto& plan = pp.plan;
  if (a.json) {
    auto j = plan_json(pp, *gathered);
    j["page_cache_pct"] = page_cache_json(cfg);
    j["evict"] = evict_json(cfg);
    j["models_dir"] = fits_json(*fits);
    std::cout << dump_json(j, 2) << '\n';
  } else {
    print_fits(*fits);
    print_plan(pp, *gathered);
    print_eviction(cfg);
    print_page_cache(cfg);
  }
  return plan.ok() ? kExitOk : kExitFailure;
}

}  // namespace

void add_plan(CLI::App& app, Globals& g) {
  auto args = std::make_shared<PlanArgs>();
  auto* sub = app.add_subcommand("plan", "VRAM ledger per profile and resident set, and the residency plan");
  sub->add_option("config", args->config, "kevlaya.yaml (default: ./kevlaya.yaml)");
  sub->add_flag("--json", args->json, "print the ledger and plan as JSON");
  sub->add_option("--models-dir", args->models_dir, "plan every GGUF model of DIR (overrides models_dir)");
  sub->add_option("--vram-mib", args->vram_mib, "plan one GPU of N MiB (overrides gpu.vram_mib, gpu.devices and NVML)");
  sub->callback([&g, args] { g.exit_code = run_plan(*args); });
}

}  // namespace kevlaya::cli
