// `kevlaya-orch init [DIR] --models-dir M [--vram-mib N] [--force]`: writes the configuration that
// `serve --models-dir M` would use (DIR/kevlaya.yaml and one DIR/profiles/NAME.yaml per model, with
// the ledger's ngl/ctx/parallel and why), so a user starts from it and edits.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/write_files.hpp"
#include "config/emit.hpp"
#include "config/models_dir.hpp"
#include "runtime/discovered.hpp"
#include "runtime/plan_setup.hpp"

namespace kevlaya::cli {
namespace {

namespace fs = std::filesystem;

struct InitArgs {
  std::string dir = ".";
  std::string models_dir;
  std::optional<std::int64_t> vram_mib;
  bool force = false;
};

std::string orchestrator_yaml(const fs::path& models, std::optional<std::int64_t> vram_mib) {
  std::string y = "# Written by `kevlaya-orch init`: the configuration `serve --models-dir` used for this folder.\n"
                  "# Profiles in profiles/ win over the models_dir model of the same name; a model added to\n"
                  "# the folder later is still served, fitted at start (docs/configuration.md#models_dir).\n";
  y += "models_dir: " + config::yaml_scalar(models.string()) + "\nprofiles_dir: profiles\n";
  if (vram_mib) y += "gpu:\n  vram_mib: " + std::to_string(*vram_mib) + "\n";
  return y;
}

int run_init(const InitArgs& a) {
  config::Config cfg;
  cfg.orch.models_dir = fs::absolute(a.models_dir).lexically_normal();
  if (a.vram_mib) cfg.orch.gpu.vram_mib = *a.vram_mib;
  std::error_code ec;
  if (!fs::is_directory(cfg.orch.models_dir, ec)) {
    std::cerr << "kevlaya-orch init: models folder not found: " << cfg.orch.models_dir.string() << '\n';
    return kExitFailure;
  }
  auto found = config::discover(config::scan_models_dir(cfg.orch.models_dir), config::default_models_binary(), {});
  for (const auto& n : found.notes) std::cerr << "warning: " << n << '\n';
  if (found.profiles.empty()) {
    std::cerr << "kevlaya-orch init: no model (*.gguf) to serve in " << cfg.orch.models_dir.string() << '\n';
    return kExitFailure;
  }
  cfg.profiles = std::move(found.profiles);
  const auto fits = runtime::fit_discovered(cfg, runtime::gpu_devices(cfg, a.vram_mib));
  if (!fits) {
    std::cerr << "kevlaya-orch init: " << fits.error().message << '\n';
    return kExitFailure;
  }
  Files files;
  files.emplace_back("kevlaya.yaml", orchestrator_yaml(cfg.orch.models_dir, a.vram_mib));
  for (std::size_t i = 0; i < cfg.profiles.size(); ++i) {
    auto p = cfg.profiles[i];
    p.discovered = false;
    const auto& fit = fits.value()[i];
    const auto& c = fit.choice;
    files.emplace_back("profiles/" + p.name + ".yaml",
                       config::profile_yaml(p, "From " + fit.model + " (kevlaya-orch init).\n" +
                                                   ledger::to_string(c) + ": " + c.why));
  }
  return write_files(a.dir, files, a.force, "init") ? kExitOk : kExitFailure;
}

}  // namespace

void add_init(CLI::App& app, Globals& g) {
  auto args = std::make_shared<InitArgs>();
  auto* sub = app.add_subcommand("init", "write kevlaya.yaml and a profile per model of a folder (what "
                                         "`serve --models-dir` would use), to edit");
  sub->add_option("dir", args->dir, "where to write kevlaya.yaml and profiles/ (default: here)");
  sub->add_option("--models-dir", args->models_dir, "the folder of GGUF models")->required();
  sub->add_option("--vram-mib", args->vram_mib, "fit for one GPU of N MiB (default: NVML, else host RAM); "
                                                "written as gpu.vram_mib");
  sub->add_flag("--force", args->force, "overwrite files that exist");
  sub->callback([&g, args] { g.exit_code = run_init(*args); });
}

}  // namespace kevlaya::cli
