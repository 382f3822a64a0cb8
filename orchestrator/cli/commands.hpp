// Subcommands of kevlaya-orch. Each add_* registers one CLI11 subcommand whose callback stores
// the process exit code in Globals::exit_code. Exit codes are documented in README.md.
#pragma once
#include <string>
#include <string_view>

#include "runtime/exit_codes.hpp"

namespace CLI { class App; }
namespace kevlaya { struct Error; }

namespace kevlaya::cli {

// Exit codes shared by every subcommand (defined once, in runtime/exit_codes.hpp).
inline constexpr int kExitOk = runtime::kExitOk;
inline constexpr int kExitFailure = runtime::kExitFailure;
inline constexpr int kExitPartial = runtime::kExitPartial;
inline constexpr int kExitInterrupted = runtime::kExitInterrupted;

struct Globals {
  std::string log_level = "info";
  int exit_code = kExitOk;
};

void add_check(CLI::App& app, Globals& g);    // check [CONFIG]
void add_args(CLI::App& app, Globals& g);     // args PROFILE
void add_inspect(CLI::App& app, Globals& g);  // inspect FILE.gguf [--json]
void add_plan(CLI::App& app, Globals& g);     // plan [CONFIG] [--json]
void add_up(CLI::App& app, Globals& g);       // up CONFIG PROFILE...
void add_run(CLI::App& app, Globals& g);      // run PIPELINE.yaml
void add_eval(CLI::App& app, Globals& g);     // eval PIPELINE.yaml --scenarios F
void add_serve(CLI::App& app, Globals& g);    // serve [CONFIG]
void add_logs(CLI::App& app, Globals& g);     // logs PROFILE [-f]
void add_init(CLI::App& app, Globals& g);     // init [DIR] --models-dir M
void add_import(CLI::App& app, Globals& g);   // import llama-swap CONFIG [--out DIR]
void add_client(CLI::App& app, Globals& g);   // status, load, unload, reload, events (a running door)
void add_schema(CLI::App& app, Globals& g);   // schema [orchestrator|profile|pipeline]

// Prints "kevlaya-orch CMD: message" and the hint, if any, on stderr; returns kExitFailure.
int fail_with(const char* cmd, const Error& e);

// Entry point used by main.cpp (and tests): parses argv, runs the subcommand, returns exit code.
// `allocator`: what --version names as the process's malloc (main.cpp knows what it links).
int run_cli(int argc, const char* const* argv, std::string_view allocator);

}  // namespace kevlaya::cli
