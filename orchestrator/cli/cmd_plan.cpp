#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace kevlaya::cli {

void add_plan(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("plan", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch plan: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

}  // namespace kevlaya::cli
