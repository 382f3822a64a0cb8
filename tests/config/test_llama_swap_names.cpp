// `import llama-swap` against ids and values that would lose a profile, hide one, or write a
// secret in clear (docs/from-llama-swap.md, docs/security.md).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>

#include "config/llama_swap.hpp"
#include "fixture.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names(const config::SwapImport& im) {
  std::vector<std::string> out;
  for (const auto& p : im.profiles) out.push_back(p.name);
  return out;
}

std::string names_report(const config::SwapImport& im) {
  std::string s;
  for (const auto& d : im.report) s += d.format() + "\n";
  return s;
}

const config::Profile& names_named(const config::SwapImport& im, const std::string& n) {
  for (const auto& p : im.profiles)
    if (p.name == n) return p;
  FAIL("no profile " << n);
  throw 0;
}

constexpr const char* kSecret = "hf_SECRET9b1e";

}  // namespace

TEST_CASE("import llama-swap: ids that clean to one name become distinct profiles, each reported") {
  test::TempDir dir("swap-import-clash");
  test::write_text(dir / "swap.yaml", "models:\n"
                                      "  \"qwen:7b\":\n    cmd: llama-server -m /m.gguf --port ${PORT}\n"
                                      "  \"qwen/7b\":\n    cmd: llama-server -m /n.gguf --port ${PORT}\n"
                                      "  QWEN-7B:\n    cmd: llama-server -m /o.gguf --port ${PORT}\n"
                                      "groups:\n  g:\n    persistent: true\n    members: [\"qwen/7b\"]\n"
                                      "hooks:\n  on_startup:\n    preload: [QWEN-7B]\n");
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  const auto r = names_report(im);
  INFO(r);
  REQUIRE(im.errors.empty());
  // File names: a case-insensitive file system would merge qwen-7b and QWEN-7B too.
  CHECK(names(im) == std::vector<std::string>{"qwen-7b", "qwen-7b-2", "QWEN-7B-3"});
  CHECK(names_named(im, "qwen-7b-2").model == "/n.gguf");
  CHECK(names_named(im, "qwen-7b-2").pin);  // the group names its id: the renamed profile is the one pinned
  CHECK_FALSE(names_named(im, "qwen-7b").pin);
  CHECK(im.orchestrator_yaml.find("preload: [QWEN-7B-3]\n") != std::string::npos);
  CHECK(r.find(test::diag(dir / "swap.yaml", 4, 3, "model 'qwen/7b' is named like an earlier profile ('qwen-7b'): served as 'qwen-7b-2'",
                          "warning")) != std::string::npos);
}

TEST_CASE("import llama-swap: an id with nothing to name a file by becomes model-N, never a hidden file") {
  test::TempDir dir("swap-import-dots");
  test::write_text(dir / "m.gguf", "GGUF dummy");
  const std::string m = (dir / "m.gguf").string();
  test::write_text(dir / "swap.yaml", "models:\n  \"..\":\n    cmd: llama-server -m " + m + " --port ${PORT}\n"
                                      "  \"---\":\n    cmd: llama-server -m " + m + " --port ${PORT}\n"
                                      "  \".hidden\":\n    cmd: llama-server -m " + m + " --port ${PORT}\n");
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  INFO(names_report(im));
  CHECK(names(im) == std::vector<std::string>{"model-1", "model-2", "hidden"});
  CHECK(names_report(im).find("model '..' has no letter or digit to name it by: served as 'model-1'") != std::string::npos);
  const auto r = test::run_command(test::orch_binary().string() + " import llama-swap " + (dir / "swap.yaml").string() +
                                   " --out " + (dir / "out").string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (const auto& e : fs::directory_iterator(dir / "out/profiles")) CHECK(e.path().filename().string()[0] != '.');
  CHECK(fs::exists(dir / "out/profiles/model-1.yaml"));
}

TEST_CASE("import llama-swap: ${env.X} in cmd is written as the reference ${X}, never its value") {
  test::TempDir dir("swap-import-secret");
  ::setenv("KEVLAYA_SWAP_TEST_TOKEN", kSecret, 1);
  ::setenv("KEVLAYA_SWAP_TEST_CTX", "4096", 1);
  test::write_text(dir / "m.gguf", "GGUF dummy");
  test::write_text(dir / "swap.yaml", "models:\n"
                                      "  hf:\n    cmd: llama-server -hf org/model --hf-token ${env.KEVLAYA_SWAP_TEST_TOKEN} --port ${PORT}\n"
                                      "  local:\n    cmd: llama-server -m m.gguf -c ${env.KEVLAYA_SWAP_TEST_CTX} --port ${PORT}"
                                      " --upstream-token ${env.KEVLAYA_SWAP_TEST_TOKEN}\n"
                                      "    env: [\"HF_TOKEN=${env.KEVLAYA_SWAP_TEST_TOKEN}\"]\n");
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  INFO(names_report(im));
  REQUIRE(im.errors.empty());
  const auto& hf = names_named(im, "hf");
  CHECK(hf.backend == config::Backend::command);
  CHECK(std::find(hf.command.begin(), hf.command.end(), "${KEVLAYA_SWAP_TEST_TOKEN}") != hf.command.end());
  const auto& local = names_named(im, "local");
  CHECK(local.ctx == 4096);  // a number holds no reference: its value is read now
  CHECK(local.env.at("HF_TOKEN") == "${KEVLAYA_SWAP_TEST_TOKEN}");
  CHECK(names_report(im).find(kSecret) == std::string::npos);
  for (const auto& p : im.profiles) {
    const auto text = config::imported_profile_yaml(p, im);
    INFO(text);
    CHECK(text.find(kSecret) == std::string::npos);
    CHECK(text.find("${KEVLAYA_SWAP_TEST_TOKEN}") != std::string::npos);
    CHECK(text.find("$${") == std::string::npos);  // a reference, not the escaped literal
  }
  // The written profile reads the value when it is loaded.
  test::write_text(dir / "p/hf.yaml", config::imported_profile_yaml(hf, im));
  const auto loaded = config::load_profile_file(dir / "p/hf.yaml");
  INFO(test::dump(loaded));
  REQUIRE(test::errors(loaded).empty());
  const auto& cmd = loaded.config.profiles.at(0).command;
  CHECK(std::find(cmd.begin(), cmd.end(), kSecret) != cmd.end());
}

TEST_CASE("import llama-swap CLI: the files hold no secret value and only their owner reads them") {
  test::TempDir dir("swap-import-secret-cli");
  ::setenv("KEVLAYA_SWAP_TEST_TOKEN", kSecret, 1);
  test::write_text(dir / "m.gguf", "GGUF dummy");
  test::write_text(dir / "swap.yaml", "apiKeys: [\"${env.KEVLAYA_SWAP_TEST_TOKEN}\"]\nmodels:\n"
                                      "  a:\n    cmd: llama-server -m " + (dir / "m.gguf").string() +
                                      " --port ${PORT} --upstream-token ${env.KEVLAYA_SWAP_TEST_TOKEN}\n");
  const auto r = test::run_command(test::orch_binary().string() + " import llama-swap " + (dir / "swap.yaml").string() +
                                   " --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find(kSecret) == std::string::npos);
  for (const auto& f : {dir / "out/kevlaya.yaml", dir / "out/profiles/a.yaml"}) {
    INFO(f);
    CHECK(test::read_text(f).find(kSecret) == std::string::npos);
    struct stat st {};
    REQUIRE(::stat(f.c_str(), &st) == 0);
    CHECK((st.st_mode & 0077) == 0);
  }
  CHECK(test::read_text(dir / "out/profiles/a.yaml").find("${KEVLAYA_SWAP_TEST_TOKEN}") != std::string::npos);
}
