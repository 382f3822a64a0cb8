// The official client libraries (tests/package.json, pinned by package-lock.json) against
// `kevlaya-orch serve`: each tests/e2e/clients/*.mjs script fails (exit != 0) if its client raises
// or parses a different shape. Skipped when node or tests/node_modules (`npm ci` in tests/) is
// missing. Children: kev (alias k), laya and emb (--embeddings), rotating, so calls swap.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

std::string missing_tools() {
  if (run_command("command -v node").exit_code != 0) return "node is not installed";
  for (const char* pkg : {"openai", "@anthropic-ai/sdk", "ollama"})
    if (!std::filesystem::exists(source_dir() / "tests/node_modules" / pkg))
      return std::string("tests/node_modules/") + pkg + " is missing (run `npm ci` in tests/)";
  return {};
}

// `extra`: appended to each chat profile (kev, laya) and to kevlaya.yaml's top level.
void run_client(const std::string& binary, const std::string& script, const std::string& profile_extra = "",
                const std::string& top_extra = "") {
  if (const auto why = missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-clients");
  write_api_config(dir.path(), binary);
  for (const char* name : {"kev", "laya"}) {
    const auto f = dir / "profiles" / (std::string(name) + ".yaml");
    write_text(f, read_text(f) + profile_extra);
  }
  write_text(dir / "kevlaya.yaml", read_text(dir / "kevlaya.yaml") + top_extra);
  Serve serve(dir / "kevlaya.yaml");
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) + " timeout 300 node " +
                       (source_dir() / "tests/e2e/clients" / script).string());
  INFO(r.output);
  INFO(serve.proc().log());
  CHECK(r.exit_code == 0);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("the openai client (chat, Responses streaming, embeddings) works through the door", "[http][e2e][clients]") {
  run_client(standin_binary().string(), "openai.mjs");
}

TEST_CASE("the @anthropic-ai/sdk client (messages, streaming, count_tokens) works through the door",
          "[http][e2e][clients]") {
  run_client(standin_binary().string(), "anthropic.mjs");
}

TEST_CASE("the ollama client (chat, generate, tags, streaming) works through the door", "[http][e2e][clients]") {
  run_client(standin_binary().string(), "ollama.mjs");
}

TEST_CASE("with loading_messages: reasoning the openai, anthropic and ollama clients see a load as reasoning, never in the answer",
          "[http][e2e][clients]") {
  run_client(standin_binary().string(), "loading.mjs", "extra_args: [--fake-load-ms, '1500']\n",
             "loading_messages: reasoning\n");
}

TEST_CASE("the three clients work through the door against the real llama-server", "[http][e2e][clients][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  for (const char* script : {"openai.mjs", "anthropic.mjs", "ollama.mjs"}) {
    INFO(script);
    run_client(real, script);
  }
}
