#include <catch2/catch.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

// A copy of the repository's tiny sample tree, with dummy model files.
void copy_tiny(const TempDir& d) {
  for (const char* f : {"kevlaya.tiny.yaml", "profiles/tiny/kev.yaml", "profiles/tiny/laya.yaml",
                        "pipelines/decide-verify.yaml"})
    write_text(d / f, read_text(source_dir() / f));
  write_text(d / "var/models/kev-tiny.gguf", "GGUF");
  write_text(d / "var/models/laya-tiny.gguf", "GGUF");
}

std::string orch(const TempDir& d, const std::string& args) {
  return "cd '" + d.path().string() + "' && " + orch_binary().string() + " " + args;
}

}  // namespace

TEST_CASE("cli check: the tiny sample config is valid and summarized", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  const auto r = run_command(orch(d, "check kevlaya.tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("listen: 127.0.0.1:8080") != std::string::npos);
  CHECK(r.output.find("kev  kev-tiny.gguf  ngl 0  ctx 512  np 1") != std::string::npos);
  CHECK(r.output.find("decide-verify: decide(kev) -> verify(laya)  max_rounds 3") != std::string::npos);
  CHECK(r.output.find("ok: 0 error(s), 0 warning(s)") != std::string::npos);
}

TEST_CASE("cli check: every problem is printed and the exit status is 1", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  write_text(d / "profiles/tiny/kev.yaml", "name: kev\nmodel: ../../var/models/kev-tiny.gguf\nctx: \"lots\"\nngl: -5\n");
  const auto r = run_command(orch(d, "check kevlaya.tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("profiles/tiny/kev.yaml:3:6: error: ctx: expected an integer, got string \"lots\"") != std::string::npos);
  CHECK(r.output.find("profiles/tiny/kev.yaml:4:6: error: ngl must be a number of layers >= 0 or 'all', got -5") != std::string::npos);
  CHECK(r.output.find("invalid: 2 error(s)") != std::string::npos);
}

TEST_CASE("cli check: a single profile or pipeline file can be checked", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  CHECK(run_command(orch(d, "check profiles/tiny/kev.yaml")).exit_code == 0);
  CHECK(run_command(orch(d, "check pipelines/decide-verify.yaml")).exit_code == 0);
  write_text(d / "bad.yaml", "stages:\n  - {name: decide, model: kev, user: \"{{nope}}\"}\n");
  const auto r = run_command(orch(d, "check bad.yaml"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("bad.yaml:2:39: error: unknown placeholder '{{nope}}'") != std::string::npos);
}

TEST_CASE("cli check: json_schema keywords the door does not check are a warning at the stage", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  write_text(d / "p.yaml",
             "name: p\nstages:\n  - name: decide\n    model: kev\n    user: \"{{input}}\"\n"
             "    output:\n      json_schema: {type: object, properties: {id: {type: string, pattern: \"^[a-z]+$\"}}}\n");
  const auto r = run_command(orch(d, "check p.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 0);  // a warning: the grammar still applies the pattern
  CHECK(r.output.find("p.yaml:3:5: warning: stage 'decide': the door does not check these json_schema keywords in an "
                      "answer (llama-server's grammar still applies them): pattern") != std::string::npos);
  CHECK(r.output.find("ok: 0 error(s), 1 warning(s)") != std::string::npos);
}

TEST_CASE("cli args: prints the exact child command, shell-quoted", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  write_text(d / "profiles/tiny/laya.yaml",
             "name: laya\nbinary: /opt/my server/llama-server\nmodel: ../../var/models/laya-tiny.gguf\n"
             "alias: verifier\nctx: 512\nenv: {OMP_NUM_THREADS: \"2\"}\n");
  const auto r = run_command(orch(d, "args verifier --config kevlaya.tiny.yaml --port 8123"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string model = (d.path() / "var/models/laya-tiny.gguf").string();
  CHECK(r.output == "OMP_NUM_THREADS=2 '/opt/my server/llama-server' -m " + model +
                        " -ngl all -c 512 -np 1 --host 127.0.0.1 --port 8123 --alias laya"
                        " --api-key '<per-start secret>' --metrics -lv 4\n");
  const auto unknown = run_command(orch(d, "args nobody --config kevlaya.tiny.yaml"));
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("no profile named 'nobody'") != std::string::npos);
}

TEST_CASE("cli args: with slot_cache the command includes --slot-save-path, as the child gets it", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  write_text(d / "profiles/tiny/kev.yaml",
             "name: kev\nmodel: ../../var/models/kev-tiny.gguf\nctx: 512\nslot_cache: {enabled: true}\n");
  const auto r = run_command(orch(d, "args kev --config kevlaya.tiny.yaml --port 9000"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string slots = (d.path() / "var/state/slots/kev").string();
  CHECK(r.output.find("--port 9000 --alias kev --slot-save-path " + slots +
                      " --api-key '<per-start secret>' --metrics -lv 4\n") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(slots));  // printing creates nothing
}

TEST_CASE("cli check: extra_args that kevlaya-orch owns are errors, bad values too (flag table)", "[cli]") {
  TempDir d("cli");
  copy_tiny(d);
  write_text(d / "profiles/tiny/kev.yaml",
             "name: kev\nmodel: ../../var/models/kev-tiny.gguf\n"
             "extra_args: [--slot-save-path, /tmp/x, --api-key=k, -ub, lots, --ctx-size, \"1024\"]\n");
  const auto r = run_command(orch(d, "check kevlaya.tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("extra_args sets '--slot-save-path', which kevlaya-orch chooses for each spawn; use the "
                      "profile's slot_cache.enabled instead") != std::string::npos);
  CHECK(r.output.find("extra_args sets '--api-key'") != std::string::npos);
  CHECK(r.output.find("extra_args: '-ub' needs an integer, got 'lots'") != std::string::npos);
  CHECK(r.output.find("warning: extra_args repeats '--ctx-size', which the profile already sets; the later value "
                      "wins in llama-server, prefer the profile key 'ctx'") != std::string::npos);
}

TEST_CASE("cli check and args have --help", "[cli]") {
  const auto c = run_command(orch_binary().string() + " check --help");
  CHECK(c.exit_code == 0);
  CHECK(c.output.find("file:line:col") != std::string::npos);
  const auto a = run_command(orch_binary().string() + " args --help");
  CHECK(a.exit_code == 0);
  CHECK(a.output.find("PROFILE") != std::string::npos);
}
