// `kevlaya-orch import llama-swap CONFIG.yaml [--out DIR] [--force]`: kevlaya.yaml and profiles/
// from a llama-swap configuration, then the report of what was not mapped (each with its line)
// and the loader's verdict on the result (docs/from-llama-swap.md).
#include <sys/stat.h>

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

// The files may hold keys the source held in clear (apiKeys, env:): created 0600 in 0700 folders
// (the umask), and an overwritten file (--force) is made 0600 too.
bool write_private(const fs::path& dir, const Files& files, bool force) {
  const mode_t old = ::umask(077);
  const bool ok = write_files(dir, files, force, "import");
  ::umask(old);
  if (!ok) return false;  // refused: the files there are the user's, left as they are
  std::error_code ec;
  for (const auto& f : files) fs::permissions(dir / f.first, fs::perms::owner_read | fs::perms::owner_write, ec);
  return true;
}

int run_import(const ImportArgs& a) {
  const auto im = config::import_llama_swap(a.config);
  for (const auto& e : im.errors) std::cerr << e.format() << '\n';
  if (!im.errors.empty()) return kExitFailure;
  Files files;
  files.emplace_back("kevlaya.yaml", im.orchestrator_yaml);
  for (const auto& p : im.profiles) files.emplace_back("profiles/" + p.name + ".yaml", config::imported_profile_yaml(p, im));
  if (!write_private(a.out, files, a.force)) return kExitFailure;
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
