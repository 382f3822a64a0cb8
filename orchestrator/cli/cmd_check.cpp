#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace kevlaya::cli {

void add_check(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("check", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch check: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

void add_args(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("args", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch args: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

}  // namespace kevlaya::cli
