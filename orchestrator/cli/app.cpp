#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"
#include "common/error.hpp"

namespace kevlaya::cli {

int fail_with(const char* cmd, const Error& e) {
  std::cerr << "kevlaya-orch " << cmd << ": " << e.message << "\n";
  if (!e.hint.empty()) std::cerr << "  hint: " << e.hint << "\n";
  return kExitFailure;
}

int run_cli(int argc, const char* const* argv, std::string_view allocator) {
  CLI::App app{"kevlaya-orch: run two local LLMs (Kev decides, Laya verifies) on one small GPU"};
  app.set_version_flag("--version", std::string("kevlaya-orch ") + KEVLAYA_VERSION + "\nallocator: " + std::string(allocator));
  app.require_subcommand(1);
  Globals g;
  app.add_option("--log-level", g.log_level, "trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(g.log_level)); });
  add_check(app, g);
  add_args(app, g);
  add_inspect(app, g);
  add_plan(app, g);
  add_up(app, g);
  add_run(app, g);
  add_eval(app, g);
  add_serve(app, g);
  add_logs(app, g);
  add_init(app, g);
  add_import(app, g);
  add_client(app, g);
  add_schema(app, g);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return g.exit_code;
}

}  // namespace kevlaya::cli
