// Tool calls through the door on the real llama-server: kev-tools (tools/decisions/models/kev-tools.gguf,
// a tiny Kev trained to call pick_strategy, with a chat template whose <tool_call> format llama-server
// parses natively) behind a one-profile `kevlaya-orch serve`, driven by the official clients
// (tests/e2e/clients/tools.mjs) and two agent frameworks (agents.mjs). Skipped without
// KEVLAYA_LLAMA_SERVER, node or tests/node_modules (`npm ci` in tests/).
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>

#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

std::string missing_node_packages() {
  if (run_command("command -v node").exit_code != 0) return "node is not installed";
  for (const char* pkg : {"openai", "@anthropic-ai/sdk", "ollama", "ai", "@ai-sdk/openai-compatible",
                          "@langchain/openai", "@langchain/core"})
    if (!std::filesystem::exists(source_dir() / "tests/node_modules" / pkg))
      return std::string("tests/node_modules/") + pkg + " is missing (run `npm ci` in tests/)";
  return {};
}

// Serves kev-tools alone on `server` and runs `script` against the door; the script's exit is the verdict.
void run_tool_script(const std::string& server, const std::string& script) {
  if (const auto why = missing_node_packages(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("tool-calls");
  write_text(dir / "profiles/kev-tools.yaml",
             "name: kev-tools\nbinary: " + server + "\nmodel: " +
                 (source_dir() / "tools/decisions/models/kev-tools.gguf").string() +
                 "\nngl: 0\nctx: 512\nparallel: 1\nextra_args: [\"-t\", \"1\"]\n");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\n");
  Serve serve(dir / "kevlaya.yaml");
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) + " timeout 300 node " +
                       (source_dir() / "tests/e2e/clients" / script).string());
  INFO(r.output);
  INFO(serve.proc().log());
  CHECK(r.exit_code == 0);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("tool calls: a required call reaches every API's client whole and streamed on the real llama-server",
          "[http][e2e][clients][real][tools]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  run_tool_script(server, "tools.mjs");
}

TEST_CASE("tool calls: the AI SDK and LangChain finish a call -> result -> answer round trip through the door",
          "[http][e2e][clients][real][tools]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  run_tool_script(server, "agents.mjs");
}
