#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace kevlaya::cli {

void add_run(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("run", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch run: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

void add_eval(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("eval", "(not implemented yet)");
  sub->callback([&g] {
    std::cerr << "kevlaya-orch eval: not implemented yet\n";
    g.exit_code = kExitFailure;
  });
}

}  // namespace kevlaya::cli
