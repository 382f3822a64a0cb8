#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace kevlaya::cli {

void add_up(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("up", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch up: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

}  // namespace kevlaya::cli
