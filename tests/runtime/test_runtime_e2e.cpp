// The one startup path (runtime/) seen from outside: one instance per state directory, start-up
// clean-up that touches only child records, and plan refusals honoured by every command.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>
#include <string>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// kev (slow tokens, so a stream lasts) and laya on the stand-in; the demo pipeline.
void write_config(const TempDir& dir, const std::string& kev_extra = "") {
  const std::string common = "binary: " + standin_binary().string() + "\nmodel: " + tiny_llama().string() +
                             "\nngl: 0\nctx: 256\nparallel: 1\n";
  write_text(dir / "profiles/kev.yaml",
             "name: kev\n" + common + "extra_args: [--fake-token-ms, \"40\"]\n" + kev_extra);
  write_text(dir / "profiles/laya.yaml", "name: laya\n" + common);
  write_text(dir / "pipelines/decide-verify.yaml", read_text(source_dir() / "pipelines/decide-verify.yaml"));
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n");
}

}  // namespace

TEST_CASE("state_dir lock: a second instance is refused while the first streams, the first's child survives",
          "[runtime][e2e]") {
  TempDir dir("runtime-lock");
  write_config(dir);
  // Not a child record: start-up clean-up must neither delete nor trip over these.
  std::filesystem::create_directories(dir / "state/x.json");
  write_text(dir / "state/ledger-measurements.json", "{}");
  Serve first(dir / "kevlaya.yaml");
  const std::string base = "http://127.0.0.1:" + std::to_string(first.port());
  const std::string chat =
      R"({"model":"kev","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"Once"}]})";
  const auto out = dir / "stream.txt";
  const auto bg = run_command("curl -sS -N --max-time 120 -H 'Content-Type: application/json' -d '" + chat + "' " +
                              base + "/v1/chat/completions >" + out.string() + " 2>&1 & echo $!");
  const std::string curl = std::to_string(std::stoi(bg.output));
  REQUIRE(eventually([&] { return read_text(out).find("data: ") != std::string::npos; }, 60s));
  const std::string holder = "is in use by another kevlaya-orch (pid " + std::to_string(first.proc().pid()) + ")";
  const std::string cfg = (dir / "kevlaya.yaml").string();
  for (const std::string& args : {"serve " + cfg + " --port 0", "up " + cfg + " kev",
                                 "run decide-verify --config " + cfg + " --input hi"}) {
    const auto second = run_command(orch_binary().string() + " " + args);
    INFO(second.output);
    CHECK(second.exit_code == 1);
    CHECK(second.output.find(holder) != std::string::npos);
    CHECK(second.output.find("killing leftover child") == std::string::npos);
  }
  CHECK(run_command("for i in $(seq 1 1200); do kill -0 " + curl + " 2>/dev/null || exit 0; sleep 0.05; done; exit 1")
            .exit_code == 0);
  const std::string streamed = read_text(out);
  INFO(streamed);
  CHECK(streamed.find("data: [DONE]") != std::string::npos);
  CHECK(streamed.find("\"error\"") == std::string::npos);
  CHECK(first.proc().signal_and_wait(SIGTERM) == 0);
  CHECK(std::filesystem::is_directory(dir / "state/x.json"));
  CHECK(std::filesystem::exists(dir / "state/ledger-measurements.json"));
}

TEST_CASE("runtime: a plan the ledger refuses stops run and up as it stops serve, before any child starts",
          "[runtime][e2e]") {
  TempDir dir("runtime-refused");
  // A model file given as a LoRA adapter: not an adapter of this base (adapter.type missing).
  write_config(dir, "lora:\n  - path: " + tiny_llama().string() + "\n");
  const std::string cfg = (dir / "kevlaya.yaml").string();
  for (const std::string& args : {"serve " + cfg + " --port 0", "up " + cfg + " kev",
                                 "run decide-verify --config " + cfg + " --input hi"}) {
    const auto r = run_command(orch_binary().string() + " " + args);
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("adapter") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "logs/kev.log"));  // nothing was spawned
  }
}
