// Thin executable over the kevlaya_core library (all logic lives in orchestrator/*).
#include "cli/commands.hpp"

int main(int argc, char** argv) { return kevlaya::cli::run_cli(argc, argv); }
