// Shared base end to end: `kevlaya-orch serve` plans kev and laya (same base, different LoRA
// adapters) onto ONE child and selects each profile's adapter per request through `lora`.
// With the stand-in and, when $KEVLAYA_LLAMA_SERVER is set, the real llama-server; the real run
// also checks calibration: the child's logged model + KV buffers vs the ledger's estimate.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path& tiny_models() {
  static const fs::path dir = [] {
    auto d = binary_dir() / "shared_base_models";
    if (!fs::exists(d / "kev-lora-b.gguf")) {
      auto r = run_command(tiny_gguf_tool().string() + " standins --dir " + d.string());
      if (r.exit_code != 0) throw std::runtime_error("kevlaya-tiny-gguf failed: " + r.output);
    }
    return d;
  }();
  return dir;
}

// kev (adapter a), laya (adapter b) and base (no adapter), all on kev-tiny with the same flags.
void write_config(const TempDir& dir, const std::string& binary) {
  const auto m = tiny_models();
  const std::string common = "binary: " + binary + "\nmodel: " + (m / "kev-tiny.gguf").string() +
                             "\nngl: 0\nctx: 256\nparallel: 1\n";
  write_text(dir / "profiles/kev.yaml", "name: kev\n" + common + "lora:\n  - path: " +
                                            (m / "kev-lora-a.gguf").string() + "\n");
  write_text(dir / "profiles/laya.yaml", "name: laya\n" + common + "lora:\n  - path: " +
                                             (m / "kev-lora-b.gguf").string() + "\n");
  write_text(dir / "profiles/base.yaml", "name: base\n" + common);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\ngpu:\n  vram_mib: 8192\n");
}

// Greedy /completion through the door: the generated text and the adapter scales the child applied.
std::pair<std::string, json> complete(const std::string& base, const std::string& model) {
  const std::string body = R"({"model":")" + model +
                           R"(","prompt":"Once upon a time","n_predict":8,"temperature":0,"seed":1})";
  const auto r = run_command("curl -sS --max-time 120 -H 'Content-Type: application/json' -d '" + body + "' " +
                             base + "/completion");
  INFO(r.output);
  const auto j = json::parse(r.output, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("content"));
  return {j["content"].get<std::string>(), j.value("generation_settings", json::object()).value("lora", json())};
}

json scales(double a, double b) {
  return json::array({{{"id", 0}, {"scale", a}}, {{"id", 1}, {"scale", b}}});
}

void exercise(const TempDir& dir, const std::string& binary) {
  write_config(dir, binary);
  Serve serve(dir / "kevlaya.yaml");
  INFO(serve.proc().log());
  CHECK(serve.proc().log().find("residency: shared-base") != std::string::npos);
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port());
  const auto kev = complete(base, "kev");
  const auto laya = complete(base, "laya");
  const auto plain = complete(base, "base");
  const auto kev_again = complete(base, "kev");
  CHECK(kev.second == scales(1, 0));
  CHECK(laya.second == scales(0, 1));
  CHECK(plain.second == scales(0, 0));
  CHECK(kev.first != laya.first);  // the adapter really changes the greedy output
  CHECK(kev.first != plain.first);
  CHECK(laya.first != plain.first);
  CHECK(kev_again.first == kev.first);
  // A member's log is its shared child's: /logs/kev reads base+kev+laya.log.
  const auto logs = json::parse(run_command("curl -sS --max-time 10 " + base + "/logs/kev").output, nullptr, false);
  INFO(logs.dump());
  CHECK(logs.value("model", "") == "base+kev+laya");
  CHECK(logs.value("file", false));
  CHECK_FALSE(logs.value("lines", json::array()).empty());
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  const std::string log = serve.proc().log();
  INFO(log);
  // One child served all three profiles: one start, no switch between them.
  const std::regex switch_line("switch from=\\S+ to=(\\S+) ok=true");
  std::vector<std::string> targets;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), switch_line);
       it != std::sregex_iterator(); ++it)
    targets.push_back((*it)[1].str());
  CHECK(targets == std::vector<std::string>{"base+kev+laya"});
}

}  // namespace

TEST_CASE("shared base: serve selects each profile's adapter on one stand-in child", "[e2e]") {
  TempDir dir("shared-base-standin");
  exercise(dir, standin_binary().string());
}

TEST_CASE("shared base: serve selects each profile's adapter on one real llama-server", "[e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("shared-base-real");
  exercise(dir, real);
  // The load was calibrated: `plan` now shows the measured figures next to the estimate, and
  // the estimate of the model and KV buffers is within 10% of what llama-server logged.
  const auto r = run_command(orch_binary().string() + " plan " + (dir / "kevlaya.yaml").string() + " --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.output);
  for (const auto& p : j["profiles"]) {
    INFO(p.dump());
    REQUIRE(p["measured"].is_object());
    const auto& e = p["estimate"];
    const auto& m = p["measured"];
    const double est = e["weights_gpu"].get<double>() + e["weights_cpu"].get<double>() + e["kv_gpu"].get<double>() +
                       e["kv_cpu"].get<double>();
    const double got = m.value("weights_gpu", 0.0) + m.value("weights_cpu", 0.0) + m.value("kv_gpu", 0.0) +
                       m.value("kv_cpu", 0.0);
    REQUIRE(got > 0);
    CHECK(est >= 0.9 * got);
    CHECK(est <= 1.1 * got);
  }
}
