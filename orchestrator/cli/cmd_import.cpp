// `kevlaya-orch import llama-swap CONFIG.yaml [--out DIR] [--force]`: kevlaya.yaml and profiles/
// from a llama-swap configuration, then the report of what was not mapped (each with its line)
// and the loader's verdict on the result (docs/from-llama-swap.md).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/write_files.hpp"
#include "config/emit.hpp"
#include "config/llama_swap.hpp"

namespace kevlaya::cli {
namespace {

namespace fs = std::filesystem;

struct ImportArgs {
  std::string config;
  std::string out = ".";
  bool force = false;
};

int run_import(const ImportArgs& a) {
  const auto im = config::import_llama_swap(a.config);
  for (const auto& e : im.errors) std::cerr << e.format() << '\n';
  if (!im.errors.empty()) return kExitFailure;
  Files files;
  files.emplace_back("kevlaya.yaml", im.orchestrator_yaml);
  for (const auto& p : im.profiles) files.emplace_back("profiles/" + p.name + ".yaml", config::profile_yaml(p));
  if (!write_files(a.out, files, a.force, "import")) return kExitFailure;
  std::cout << "\nnot mapped, or mapped approximately (" << im.report.size() << "):\n";
  for (const auto& r : im.report) std::cout << "  " << r.format() << '\n';
  const auto loaded = config::load(fs::path(a.out) / "kevlaya.yaml");  // what `check` will say
  for (const auto& d : loaded.diagnostics) std::cerr << d.format() << '\n';
  std::cout << "\n" << (loaded.ok() ? "the result loads: run `kevlaya-orch check " : "the result does not load yet: fix the errors above, then `kevlaya-orch check ")
            << (fs::path(a.out) / "kevlaya.yaml").string() << "`\n";
  return loaded.ok() ? kExitOk : kExitFailure;
}

}  // namespace

void add_import(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("import", "write a kevlaya-orch configuration from another tool's");
  sub->require_subcommand(1);
  auto args = std::make_shared<ImportArgs>();
  auto* ls = sub->add_subcommand("llama-swap", "from a llama-swap config.yaml (docs/from-llama-swap.md)");
  ls->add_option("config", args->config, "llama-swap's config.yaml")->required();
  ls->add_option("--out", args->out, "where to write kevlaya.yaml and profiles/ (default: here)");
  ls->add_flag("--force", args->force, "overwrite files that exist");
  ls->callback([&g, args] { g.exit_code = run_import(*args); });
}

}  // namespace kevlaya::cli
