#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace kevlaya::cli {

void add_serve(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("serve", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch serve: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

}  // namespace kevlaya::cli
