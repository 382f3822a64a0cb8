// First runs end to end, with the stand-in and the real llama-server ($KEVLAYA_LLAMA_SERVER):
// `serve --models-dir` on a folder of two GGUF files and no YAML at all, and a door imported from a
// llama-swap configuration answering the same model names (aliases included).
#include <catch2/catch.hpp>

#include <signal.h>

#include <regex>

#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
namespace fs = std::filesystem;

namespace {

// `kevlaya-orch ARGS --port 0` run in `dir` (its default state and log folders go there).
struct DoorIn {
  DoorIn(const TempDir& dir, const std::string& args, std::map<std::string, std::string> env = {})
      : proc({"/bin/sh", "-c", "cd '" + dir.path().string() + "' && exec " + orch_binary().string() + " " + args + " --port 0"},
             dir / "serve.log", std::move(env)) {
    const auto p = proc.wait_for(std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)"), 60s);
    INFO(proc.log());
    REQUIRE_FALSE(p.empty());
    base = "http://127.0.0.1:" + p;
  }
  Proc proc;
  std::string base;
};

// A chat call for `model`: the answer's status line and X-Kevlaya-Model header.
std::string first_chat(const std::string& base, const std::string& model, const std::string& key = "") {
  const std::string body = R"({"model":")" + model + R"(","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  return run_command("curl -sS -i --max-time 120 -H 'Content-Type: application/json' " +
                     (key.empty() ? std::string() : "-H 'Authorization: Bearer " + key + "' ") + "-d '" + body + "' " +
                     base + "/v1/chat/completions")
      .output;
}

void two_models(const TempDir& dir) {
  fs::create_directories(dir / "models");
  auto spec = kevlaya::gguf::stories_shaped_spec();
  REQUIRE(kevlaya::gguf::write_tiny_model(dir / "models/kev-Q8_0.gguf", spec).ok());
  spec.seed = 7;
  REQUIRE(kevlaya::gguf::write_tiny_model(dir / "models/laya.gguf", spec).ok());
}

bool no_yaml(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") return false;
  return true;
}

void folder(const std::string& server) {
  TempDir dir("first-run-folder");
  two_models(dir);
  DoorIn door(dir, "serve --models-dir models", {{"KEVLAYA_SERVER_BINARY", server}});
  for (const std::string m : {"kev-Q8_0", "laya", "kev-Q8_0"}) {
    const auto r = first_chat(door.base, m);
    INFO(r);
    INFO(door.proc.log());
    CHECK(r.find("HTTP/1.1 200") != std::string::npos);
    CHECK(r.find("X-Kevlaya-Model: " + m) != std::string::npos);
    CHECK(r.find("\"choices\"") != std::string::npos);
  }
  const auto models = run_command("curl -sS --max-time 30 " + door.base + "/v1/models").output;
  CHECK(models.find("\"id\":\"kev-Q8_0\"") != std::string::npos);
  CHECK(models.find("\"id\":\"laya\"") != std::string::npos);
  CHECK(door.proc.log().find("models_dir: laya (") != std::string::npos);  // the fit is logged at start
  CHECK(no_yaml(dir.path()));  // zero lines of YAML, written by anyone
  CHECK(door.proc.signal_and_wait(SIGTERM) == 0);
}

// Every key the import maps that a door shows: macros (nested, ${PORT}, ${MODEL_ID}), aliases in both
// spellings, apiKeys, ttl/globalTTL, hooks.on_startup.preload, env; plus keys it reports.
std::string swap_config(const std::string& server, const fs::path& models) {
  return "healthCheckTimeout: 120\n"
         "globalTTL: 300\n"
         "logLevel: info\n"
         "macros:\n"
         "  server: \"" + server + "\"\n"
         "  ctx: 512\n"
         "  base: \"${server} --port ${PORT} -ngl 0\"\n"
         "apiKeys: [\"sk-first-run\"]\n"
         "models:\n"
         "  kev:\n"
         "    cmd: |\n"
         "      # the decider\n"
         "      ${base}\n"
         "      -m " + (models / "kev-Q8_0.gguf").string() + " -c ${ctx} --alias ${MODEL_ID}\n"
         "    aliases: [decider]\n"
         "    ttl: 60\n"
         "    env: [\"KEV_NOTE=1\"]\n"
         "  laya:\n"
         "    cmd: ${base} --model " + (models / "laya.gguf").string() + " --ctx-size 256 --jinja\n"
         "    aliases:\n"
         "      - id: verifier\n"
         "        name: Verifier\n"
         "    unlisted: true\n"
         "hooks:\n"
         "  on_startup:\n"
         "    preload: [kev]\n";
}

void imported(const std::string& server) {
  TempDir dir("first-run-import");
  two_models(dir);
  write_text(dir / "llama-swap.yaml", swap_config(server, dir / "models"));
  const auto im = run_command(orch_binary().string() + " import llama-swap " + (dir / "llama-swap.yaml").string() +
                              " --out " + (dir / "conf").string());
  INFO(im.output);
  REQUIRE(im.exit_code == 0);
  const auto check = run_command(orch_binary().string() + " check " + (dir / "conf/kevlaya.yaml").string());
  INFO(check.output);
  REQUIRE(check.exit_code == 0);
  DoorIn door(dir, "serve conf/kevlaya.yaml");
  for (const std::string m : {"kev", "decider", "laya", "verifier"}) {
    const auto r = first_chat(door.base, m, "sk-first-run");
    INFO(m << "\n" << r);
    INFO(door.proc.log());
    CHECK(r.find("HTTP/1.1 200") != std::string::npos);
    CHECK(r.find("\"choices\"") != std::string::npos);
  }
  CHECK(first_chat(door.base, "kev").find("HTTP/1.1 401") != std::string::npos);  // apiKeys became api_keys
  CHECK(door.proc.signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("serve --models-dir answers both models of a folder with zero YAML (stand-in)", "[http][e2e]") {
  folder(standin_binary().string());
}

TEST_CASE("serve --models-dir answers both models of a folder with zero YAML on the real llama-server",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  folder(real);
}

TEST_CASE("a door imported from llama-swap answers its model names and aliases (stand-in)", "[http][e2e]") {
  imported(standin_binary().string());
}

TEST_CASE("a door imported from llama-swap answers its model names and aliases on the real llama-server",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  imported(real);
}
