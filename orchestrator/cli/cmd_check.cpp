// `check [CONFIG]`: validate everything and print a one-screen summary.
// `args PROFILE`: print the exact child command line a profile produces.
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "common/bounded_file.hpp"
#include "common/strings.hpp"
#include "config/backend.hpp"
#include "config/config.hpp"
#include "ledger/inputs.hpp"
#include "ledger/placement.hpp"
#include "ledger/plan.hpp"
#include "pipeline/schema.hpp"
#include "runtime/discovered.hpp"
#include "runtime/plan_setup.hpp"
#include "warm/slot_cache.hpp"

namespace kevlaya::cli {

namespace cfg = kevlaya::config;

namespace {

// Children are reached only through the orchestrator, so they listen on loopback.
constexpr const char* kChildHost = "127.0.0.1";

enum class Kind { orchestrator, profile, pipeline };

// A lone profile or pipeline file may be checked too; its top-level keys say which it is. Read
// through the bounded reader: a FIFO, a device or a file over the limit is left to the loader,
// which refuses it with the same reader's message.
Kind guess_kind(const std::string& path) {
  const auto text = read_bounded_file(path, kMaxConfigFileBytes, "a configuration file");
  if (!text) return Kind::orchestrator;
  try {
    const YAML::Node root = YAML::Load(*text);
    if (!root.IsMap()) return Kind::orchestrator;
    if (root["stages"]) return Kind::pipeline;
    for (const char* k : {"model", "backend", "ngl", "ctx", "url", "command", "binary"})
      if (root[k]) return Kind::profile;
  } catch (const YAML::Exception&) {
    // The loader reports the syntax error with its location.
  }
  return Kind::orchestrator;
}

// No CONFIG: ./kevlaya.yaml when present, else the defaults (profiles/ and pipelines/ here).
cfg::LoadResult load_any(const std::string& path) {
  if (path.empty()) return cfg::load(cfg::fs::exists("kevlaya.yaml") ? "kevlaya.yaml" : "");
  if (cfg::fs::is_directory(path)) return cfg::load(cfg::fs::path(path) / "kevlaya.yaml");
  switch (guess_kind(path)) {
    case Kind::profile: return cfg::load_profile_file(path);
    case Kind::pipeline: return cfg::load_pipeline_file(path);
    case Kind::orchestrator: break;
  }
  return cfg::load(path);
}

void print_diagnostics(const cfg::LoadResult& r) {
  for (const auto& d : r.diagnostics) std::cerr << d.format() << '\n';
}

std::string ngl_text(int ngl) { return ngl < 0 ? "all" : std::to_string(ngl); }

void print_profiles(std::ostream& out, const cfg::Config& c) {
  out << "profiles (" << c.profiles.size() << "):\n";
  for (const auto& p : c.profiles) {
    out << "  " << p.name;
    if (!p.alias.empty()) {
      out << " (alias";
      for (const auto& a : p.alias) out << ' ' << a;
      out << ')';
    }
    if (!cfg::backend_of(p).spawns) {
      out << "  remote " << p.url << '\n';
      continue;
    }
    out << "  " << (p.model.empty() ? "-" : p.model.filename().string());
    if (!p.quant.empty()) out << ' ' << p.quant;
    out << "  ngl " << ngl_text(p.ngl) << "  ctx " << p.ctx << "  np " << p.parallel;
    if (const auto& b = cfg::backend_of(p); !b.llama_server) out << "  (" << b.name << ")";
    if (!p.lora.empty()) out << "  lora " << p.lora.size();
    for (std::size_t i = 0; i < p.gpu.size(); ++i) out << (i ? "," : "  gpu ") << p.gpu[i];
    if (p.evict.protect) out << "  evict " << cfg::evict_text(p.evict);
    out << '\n';
  }
}

void print_pipelines(std::ostream& out, const cfg::Config& c) {
  out << "pipelines (" << c.pipelines.size() << "):\n";
  for (const auto& pl : c.pipelines) {
    out << "  " << pl.name << ":";
    for (std::size_t i = 0; i < pl.stages.size(); ++i)
      out << (i ? " ->" : "") << ' ' << pl.stages[i].name << '(' << pl.stages[i].model << ')';
    out << "  max_rounds " << pl.max_rounds << '\n';
  }
}

void print_summary(std::ostream& out, const cfg::LoadResult& r) {
  const auto& c = r.config;
  const auto& o = c.orch;
  if (!o.file.empty()) out << "config: " << cfg::display_path(o.file) << '\n';
  out << "listen: " << o.listen.host << ':' << o.listen.port
      << (o.api_keys.empty() ? " (no api keys)" : " (api keys: " + std::to_string(o.api_keys.size()) + ")")
      << (o.admin_api_keys.empty() ? "" : " (admin keys: " + std::to_string(o.admin_api_keys.size()) + ")")
      << "  residency: " << cfg::to_string(o.residency) << "  gpu: "
      << (o.gpu.vram_mib ? std::to_string(*o.gpu.vram_mib) + " MiB"
          : !o.gpu.devices.empty() ? std::to_string(o.gpu.devices.size()) + " device(s)" : std::string("auto"))
      << '\n';
  print_profiles(out, c);
  print_pipelines(out, c);
}

// Output-schema keywords the door's check of an answer (pipeline/schema.hpp) ignores: warnings at
// the stage, since llama-server's grammar still applies them while the model writes.
std::vector<cfg::Diagnostic> unchecked_keywords(const cfg::Config& c) {
  std::vector<cfg::Diagnostic> out;
  for (const auto& pl : c.pipelines)
    for (const auto& st : pl.stages) {
      const auto schema = nlohmann::json::parse(st.output.json_schema, nullptr, false);  // "" = none: discarded
      if (const auto kw = pipeline::unsupported_keywords(schema); !kw.empty())
        out.push_back({cfg::Severity::warning, st.loc,
                       "stage '" + st.name + "': the door does not check these json_schema keywords in an answer "
                       "(llama-server's grammar still applies them): " + join(kw, ", ")});
    }
  return out;
}

// One line per GPU: its memory and what is placed on it ("kev | laya" = they take turns).
void print_gpus(std::ostream& out, const ledger::PlacedPlan& pp) {
  for (const auto& d : pp.devices) {
    out << "  gpu " << d.device.index << (d.device.name.empty() ? "" : " (" + d.device.name + ")") << ": "
        << d.device.total / ledger::kMiB << " MiB:";
    if (d.profiles.empty()) out << " nothing placed";
    for (std::size_t i = 0; i < d.allowed_sets.size(); ++i) {
      out << (i ? " |" : "");
      for (std::size_t k = 0; k < d.allowed_sets[i].size(); ++k) {
        const auto& name = d.allowed_sets[i][k];
        const auto it = pp.placement.find(name);
        out << (k ? " + " : " ") << name << (it != pp.placement.end() && it->second.split() ? " (split)" : "");
      }
    }
    out << (d.rotates() ? "  (rotate)" : "") << '\n';
  }
}

struct LedgerCount {
  std::size_t errors = 0, warnings = 0;
};

// A plan diagnostic at the profile's location when it names one ("kev.yaml:1:1: error: ...").
void report(const cfg::Config& c, const ledger::PlanDiagnostic& d, LedgerCount& n) {
  cfg::Diagnostic out;
  out.severity = d.severity;
  const auto* p = c.find_profile(d.subject);
  if (p) out.loc = p->loc;
  out.message = (p ? "profile " : "") + d.subject + ": " + d.message;
  std::cerr << out.format() << '\n';
  ++(d.severity == cfg::Severity::error ? n.errors : n.warnings);
}

// The VRAM ledger's verdicts: incompatible adapters and profiles that cannot fit even alone are
// errors, thin headroom a warning. A model file the ledger cannot read is only noted here (the
// loader checked that it exists; the child reports what is wrong with its contents).
LedgerCount check_ledger(std::ostream& out, cfg::Config c) {
  LedgerCount n;
  if (auto fits = runtime::fit_discovered(c, runtime::gpu_devices(c)); fits) {  // models_dir: as serve fits them
    for (const auto& f : *fits)
      out << "models_dir: " << f.profile << ": " << ledger::to_string(f.choice) << '\n';
  }
  const bool local = std::any_of(c.profiles.begin(), c.profiles.end(), [](const cfg::Profile& p) {
    return cfg::backend_of(p).llama_server && !p.model.empty();
  });
  if (!local) return n;
  auto g = ledger::gather(c);
  if (!g && g.error().code == Errc::config_invalid) {  // an adapter that does not fit its base
    std::cerr << "error: " << g.error().message << '\n';
    if (!g.error().hint.empty()) std::cerr << "  hint: " << g.error().hint << '\n';
    ++n.errors;
    return n;
  }
  if (!g) {
    out << "ledger: not priced: " << g.error().message << '\n';
    return n;
  }
  const auto devices = runtime::gpu_devices(c);
  if (devices.empty()) {
    const auto ram = runtime::plan_without_gpu(c, *g);
    out << "ledger: " << config::to_string(ram.verdict.residency) << " by host RAM: " << ram.verdict.why << '\n';
    if (ram.verdict.warning) out << "warning: " << *ram.verdict.warning << '\n';
    // Which children may be alive together (each set takes its turn).
    out << "ledger: resident sets: " << ledger::format_sets(ram.plan.allowed_sets) << '\n';
    for (const auto& d : ram.plan.diagnostics)
      if (d.pin) report(c, d, n);
    return n;
  }
  const auto pp = runtime::place_on_gpus(c, *g, devices, ledger::plan_options(c.orch, 0));
  const auto& plan = pp.plan;
  out << "ledger: budget " << ledger::format_mib(plan.budget) << " MiB" << (devices.size() > 1 ? " (largest GPU)" : "")
      << ";";
  for (const auto& p : plan.profiles)
    out << ' ' << p.name << ' ' << ledger::format_mib(p.effective.total_gpu()) << (p.fits_alone ? "" : " (too big)");
  out << " MiB; residency: " << ledger::to_string(plan.mode) << '\n';
  print_gpus(out, pp);
  for (const auto& d : plan.diagnostics) report(c, d, n);
  return n;
}

}  // namespace

void add_check(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand(
      "check", "Validate the configuration (kevlaya.yaml, profiles, pipelines) and summarize it");
  auto path = std::make_shared<std::string>();
  sub->add_option("CONFIG", *path,
                  "kevlaya.yaml, a folder holding one, or a single profile/pipeline file "
                  "(default: ./kevlaya.yaml, else profiles/ and pipelines/ here)");
  sub->footer("Prints every problem as file:line:col: error: message on stderr.\n"
              "Exit status: 0 when valid (warnings allowed), 1 otherwise.");
  sub->callback([&g, path] {
    auto r = load_any(*path);
    const auto unchecked = unchecked_keywords(r.config);
    r.diagnostics.insert(r.diagnostics.end(), unchecked.begin(), unchecked.end());
    print_diagnostics(r);
    print_summary(std::cout, r);
    const LedgerCount ledger = r.ok() ? check_ledger(std::cout, r.config) : LedgerCount{};
    const std::size_t errors = r.error_count() + ledger.errors;
    const std::size_t warnings = r.diagnostics.size() - r.error_count() + ledger.warnings;
    std::cout << (errors ? "invalid: " : "ok: ") << errors << " error(s), " << warnings
              << " warning(s)\n";
    g.exit_code = errors ? kExitFailure : kExitOk;
  });
}

void add_args(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("args", "Print the command line that starts a profile's server");
  struct Opts {
    std::string profile, config;
    int port = 0;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("PROFILE", o->profile, "profile name or alias")->required();
  sub->add_option("--config,-c", o->config, "kevlaya.yaml (default: ./kevlaya.yaml, else defaults)");
  sub->add_option("--port,-p", o->port, "port to show (default: the profile's, else PORT)")
      ->check(CLI::Range(1, 65535));
  sub->footer("The output is shell-quoted for reading and copying; kevlaya-orch itself passes the\n"
              "words as an argv vector, never through a shell.");
  sub->callback([&g, o] {
    const auto r = load_any(o->config);
    print_diagnostics(r);
    g.exit_code = kExitFailure;
    if (!r.ok()) return;
    const cfg::Profile* p = r.config.find_profile(o->profile);  // reassigned below, with its placement
    if (!p) {
      std::cerr << "kevlaya-orch args: no profile named '" << o->profile << "'\n";
      return;
    }
    if (!cfg::backend_of(*p).spawns) {
      std::cout << "# profile '" << p->name << "' is remote (" << p->url << "); nothing is started\n";
      g.exit_code = kExitOk;
      return;
    }
    const std::string port = o->port ? std::to_string(o->port)
                             : p->port ? std::to_string(*p->port) : "PORT";
    // The placement the runtime would give it (CUDA_VISIBLE_DEVICES, --tensor-split), as `serve` does.
    cfg::Config placed = r.config;
    (void)runtime::fit_discovered(placed, runtime::gpu_devices(placed));  // models_dir: serve's ngl/ctx/parallel
    runtime::ResidencySetup setup;
    setup.placements = runtime::placements(placed);
    runtime::apply_placements(placed, setup);
    p = placed.find_profile(p->name);
    std::vector<std::string> words;
    for (const auto& [k, v] : p->env) words.push_back(k + "=" + v);
    for (const auto& [k, v] : cfg::placement_env(p->placement)) words.push_back(k + "=" + v);
    std::string line = cfg::shell_join(words);
    cfg::SpawnArgs spawn{kChildHost, port, {}, std::string(cfg::kChildKeyPlaceholder)};
    if (auto dir = warm::slot_save_dir(*p, r.config.orch.state_dir)) spawn.slot_save_path = dir->string();
    const std::string argv = cfg::shell_join(cfg::build_argv(*p, spawn));
    std::cout << (line.empty() ? argv : line + ' ' + argv) << '\n';
    g.exit_code = kExitOk;
  });
}

}  // namespace kevlaya::cli
