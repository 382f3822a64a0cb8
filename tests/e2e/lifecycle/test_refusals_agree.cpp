// check, plan and serve refuse the same configurations (docs/ledger.md, "check and plan verdicts"):
// a profile that cannot fit even alone in the GPU budget is refused by all three, with one message.
#include <catch2/catch.hpp>

#include "support/models.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;

namespace {

CmdResult refusal_cli(const std::string& args) {
  // bounded: a serve that did not refuse would run until the timeout (exit 124)
  return run_command("timeout 60 " + orch_binary().string() + " " + args + " 2>&1");
}

}  // namespace

TEST_CASE("lifecycle e2e: check, plan and serve all refuse a profile that cannot fit even alone", "[lifecycle][e2e]") {
  TempDir dir("refusals-agree");
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 99\nctx: 256\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\ngpu: {vram_mib: 300}\n");  // under the runtime overhead alone
  const auto cfg = (dir / "kevlaya.yaml").string();
  const auto check = refusal_cli("check " + cfg);
  INFO(check.output);
  CHECK(check.exit_code == 1);
  CHECK(check.output.find("kev: cannot fit even alone") != std::string::npos);
  const auto plan = refusal_cli("plan " + cfg);
  INFO(plan.output);
  CHECK(plan.exit_code == 1);
  CHECK(plan.output.find("cannot fit even alone") != std::string::npos);
  const auto serve = refusal_cli("serve " + cfg + " --port 0");
  INFO(serve.output);
  CHECK(serve.exit_code == 1);
  CHECK(serve.output.find("kev: cannot fit even alone") != std::string::npos);
}

TEST_CASE("lifecycle e2e: a profile that fits is served by serve after check and plan accept it", "[lifecycle][e2e]") {
  TempDir dir("refusals-agree-ok");
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 0\nctx: 256\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\ngpu: {vram_mib: 8192}\n");
  const auto cfg = (dir / "kevlaya.yaml").string();
  CHECK(refusal_cli("check " + cfg).exit_code == 0);
  CHECK(refusal_cli("plan " + cfg).exit_code == 0);
  // serve accepts it: it is still running when `timeout` stops it (124), not refused (1).
  CHECK(run_command("timeout 5 " + orch_binary().string() + " serve " + cfg + " --port 0 >/dev/null 2>&1").exit_code == 124);
}
