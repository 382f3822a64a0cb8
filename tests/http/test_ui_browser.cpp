// The status page in headless Chromium (tests/e2e/ui/browser.mjs, puppeteer-core from tests/package.json)
// against `kevlaya-orch serve` with stand-in children kev, laya (rotating) and crashy (every start
// fails with a CUDA OOM). Screenshots go to <build>/artifacts/ui/. Skipped only when chromium or
// node / tests/node_modules/puppeteer-core is missing (tools/deps.sh installs chromium; tools/test.sh
// runs `npm ci`).
#include <catch2/catch.hpp>

#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "supervisor/process_effects.hpp"

using namespace kevlaya::test;

namespace {

std::string chromium() {
  if (const char* c = std::getenv("KEVLAYA_CHROMIUM"); c && *c) return c;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    auto r = run_command(std::string("command -v ") + name);
    if (r.exit_code == 0) {
      auto path = r.output;
      while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
      return path;
    }
  }
  return {};
}

std::string browser_missing_tools() {
  if (run_command("command -v node").exit_code != 0) return "node is not installed";
  if (!std::filesystem::exists(source_dir() / "tests/node_modules/puppeteer-core"))
    return "tests/node_modules/puppeteer-core is missing (run `npm ci` in tests/)";
  if (chromium().empty()) return "no chromium (tools/deps.sh installs Debian's chromium; or set KEVLAYA_CHROMIUM)";
  return {};
}

// `crashy_args`: how its every start fails; `kind` / `text`: what its card must show (regexes).
void run_browser(const std::string& binary, const std::string& crashy_args, const std::string& kind,
                 const std::string& text) {
  if (const auto why = browser_missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-ui-browser");
  write_api_config(dir.path(), binary);
  write_text(dir / "profiles/crashy.yaml", "name: crashy\nbinary: " + binary + "\nmodel: " + tiny_llama().string() +
                                               "\nngl: 0\nctx: 256\nextra_args: [" + crashy_args + "]\n");
  std::filesystem::remove(dir / "profiles/emb.yaml");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\napi_keys: [ui-test-key]\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto artifacts = binary_dir() / "artifacts/ui";
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) +
                       " KEVLAYA_KEY=ui-test-key CHROMIUM=" + chromium() + " KEVLAYA_ARTIFACTS=" + artifacts.string() +
                       " KEVLAYA_FAIL_KIND='" + kind + "' KEVLAYA_FAIL_TEXT='" + text + "' timeout 240 node " +
                       (source_dir() / "tests/e2e/ui/browser.mjs").string() + " 2>&1");
  INFO(r.output);
  INFO(serve.proc().log());
  CHECK(r.exit_code == 0);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("the status page follows a switch and a failing profile live in headless chromium",
          "[http][ui][e2e][browser]") {
  run_browser(standin_binary().string(), "--fake-cuda-oom", "cuda_oom", "out of memory");
}

TEST_CASE("the status page follows the real llama-server live in headless chromium",
          "[http][ui][e2e][browser][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  // An argument llama-server refuses: every start exits at once with its usage error.
  run_browser(real, "--no-such-flag", "exited|bad_model|crashed", "no-such-flag|invalid argument|error");
}

// The page across a door restart: offline and retrying while it is gone, live again and repainted
// from the new door when it returns (tests/e2e/ui/reconnect.mjs starts and stops the door itself).
TEST_CASE("the status page goes offline when the door stops and is live and repainted when it returns",
          "[http][ui][e2e][browser]") {
  if (const auto why = browser_missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-ui-reconnect");
  write_api_config(dir.path(), standin_binary().string());
  std::filesystem::remove(dir / "profiles/emb.yaml");
  const int port = kevlaya::supervisor::pick_free_port("127.0.0.1");  // the same URL after the restart
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\napi_keys: [ui-test-key]\nlisten: {port: " +
                                       std::to_string(port) + "}\n");
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(port) + " KEVLAYA_KEY=ui-test-key CHROMIUM=" +
                       chromium() + " KEVLAYA_ORCH=" + orch_binary().string() + " KEVLAYA_CONFIG=" +
                       (dir / "kevlaya.yaml").string() + " timeout 180 node " +
                       (source_dir() / "tests/e2e/ui/reconnect.mjs").string() + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("UI_RECONNECT ok") != std::string::npos);
}

// admin_api_keys: the page opened with an agent's key shows the door's 403 in the log pane and on a
// card's Unload, and unloads nothing (tests/e2e/ui/agent_key.mjs).
TEST_CASE("the status page with an agent's key shows the 403 for logs and Unload when admin keys are set",
          "[http][ui][e2e][browser]") {
  if (const auto why = browser_missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-ui-agent-key");
  write_api_config(dir.path(), standin_binary().string());
  std::filesystem::remove(dir / "profiles/emb.yaml");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\napi_keys: [ui-test-key]\nadmin_api_keys: [ui-admin-key]\n");
  Serve serve(dir / "kevlaya.yaml");
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) +
                       " KEVLAYA_KEY=ui-test-key KEVLAYA_ADMIN_KEY=ui-admin-key CHROMIUM=" + chromium() + " timeout 120 node " +
                       (source_dir() / "tests/e2e/ui/agent_key.mjs").string() + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("UI_AGENT_KEY ok") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// The Activity view, in-flight table with Cancel and capture viewer (tests/e2e/ui/activity.mjs).
TEST_CASE("the status page shows the history, cancels a call in flight and opens a capture", "[http][ui][e2e][browser]") {
  if (const auto why = browser_missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-ui-activity");
  const auto standin = standin_binary().string();
  write_api_config(dir.path(), standin);
  std::filesystem::remove(dir / "profiles/emb.yaml");
  write_text(dir / "profiles/slow.yaml", "name: slow\nbinary: " + standin + "\nmodel: " + tiny_llama().string() +
                                             "\nngl: 0\nctx: 256\nextra_args: [--fake-token-ms, \"200\"]\n");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\napi_keys: [ui-test-key]\n"
                                   "admin_api_keys: [ui-admin-key]\ncapture: {enabled: true}\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto artifacts = binary_dir() / "artifacts/ui";
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) +
                       " KEVLAYA_KEY=ui-test-key KEVLAYA_ADMIN_KEY=ui-admin-key CHROMIUM=" + chromium() +
                       " KEVLAYA_ARTIFACTS=" + artifacts.string() + " timeout 180 node " +
                       (source_dir() / "tests/e2e/ui/activity.mjs").string() + " 2>&1");
  INFO(r.output);
  INFO(serve.proc().log());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("UI_ACTIVITY ok") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// Why a child went (the switch timeline) and the load ETA on a loading card (tests/e2e/ui/eviction.mjs).
TEST_CASE("the status page shows why a child was evicted and a loading model's time left", "[http][ui][e2e][browser]") {
  if (const auto why = browser_missing_tools(); !why.empty()) KEVLAYA_SKIP(why);
  TempDir dir("http-ui-eviction");
  const auto common = "binary: " + standin_binary().string() + "\nmodel: " + tiny_llama().string() + "\nngl: 0\nctx: 256\n";
  write_text(dir / "profiles/kev.yaml", "name: kev\n" + common);
  write_text(dir / "profiles/laya.yaml", "name: laya\n" + common + "extra_args: [--fake-load-ms, '2000']\n");
  write_text(dir / "pipelines/.keep", "");
  // No switch ahead: after kev, laya, kev, laya it would stop laya at once for the guessed kev.
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\napi_keys: [ui-test-key]\n"
                                   "scheduling: {switch_ahead: false}\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto artifacts = binary_dir() / "artifacts/ui";
  auto r = run_command("KEVLAYA_URL=http://127.0.0.1:" + std::to_string(serve.port()) + " KEVLAYA_KEY=ui-test-key CHROMIUM=" +
                       chromium() + " KEVLAYA_ARTIFACTS=" + artifacts.string() + " timeout 120 node " +
                       (source_dir() / "tests/e2e/ui/eviction.mjs").string() + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("UI_EVICTION ok") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
