// `kevlaya-orch plan` end to end on the stories-shaped model (stories260K's tensor table; no GPU: the
// budget is given).
#include <catch2/catch.hpp>

#include "common/hash.hpp"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "gguf/writer.hpp"
#include "ledger/calibration.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

// kevlaya.yaml + profiles/kev.yaml + profiles/laya.yaml, both on `model` with the given extras.
void write_config(const test::TempDir& dir, const fs::path& model, const std::string& kev_extra,
                  const std::string& laya_extra, const std::string& orch_extra = "") {
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\ngpu:\n  vram_mib: 8192\n" + orch_extra);
  test::write_text(dir / "profiles/kev.yaml",
                   "name: kev\nmodel: " + model.string() + "\nngl: all\nctx: 2048\n" + kev_extra);
  test::write_text(dir / "profiles/laya.yaml",
                   "name: laya\nmodel: " + model.string() + "\nngl: all\nctx: 2048\n" + laya_extra);
}

test::CmdResult plan(const test::TempDir& dir, const std::string& args) {
  return test::run_command(test::orch_binary().string() + " plan " + (dir / "kevlaya.yaml").string() + " " + args);
}

}  // namespace

TEST_CASE("plan CLI: two profiles on the stories-shaped model are co-resident and priced like llama-server") {
  test::TempDir dir("plan-cli-co");
  write_config(dir, test::tiny_llama(), "", "shared_base: false\n");
  const auto r = plan(dir, "--json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["mode"] == "co-resident");
  CHECK(j["allowed_sets"] == nlohmann::json::array({nlohmann::json::array({"kev", "laya"})}));
  CHECK(j["budget"] == (8192ULL - 256) * 1048576ULL);
  const auto& kev = j["profiles"][0]["estimate"];
  CHECK(kev["kv_gpu"] == 1310720);                // llama-server logs 1.25 MiB for this model at -c 2048
  CHECK(kev["weights_gpu"].get<std::uint64_t>() + kev["weights_cpu"].get<std::uint64_t>() == 1171200);  // CPU_Mapped 1.12 MiB when nothing is offloaded
  CHECK(kev["overhead_gpu"] == 450ULL * 1048576ULL);
}

TEST_CASE("plan CLI: same model and flags -> one shared-base child, text output lists the group") {
  test::TempDir dir("plan-cli-shared");
  write_config(dir, test::tiny_llama(), "", "");
  const auto r = plan(dir, "");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("mode: shared-base") != std::string::npos);
  CHECK(r.output.find("[kev, laya] one child") != std::string::npos);
}

TEST_CASE("plan CLI: --vram-mib too small refuses the profiles and exits 1") {
  test::TempDir dir("plan-cli-small");
  write_config(dir, test::tiny_llama(), "", "");
  const auto r = plan(dir, "--vram-mib 600");  // 600 - 256 reserve < 450 overhead
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("cannot fit even alone") != std::string::npos);
  CHECK(r.output.find("runtime overhead") != std::string::npos);
}

TEST_CASE("plan CLI: a file that is not GGUF is a clear error naming the profile") {
  test::TempDir dir("plan-cli-bad");
  test::write_text(dir / "bad.gguf", "this is not a model");
  write_config(dir, dir / "bad.gguf", "", "");
  const auto r = plan(dir, "");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("profile kev: model") != std::string::npos);
}

TEST_CASE("plan CLI: a stored measurement shows next to the estimate") {
  test::TempDir dir("plan-cli-measured");
  write_config(dir, test::tiny_llama(), "", "shared_base: false\n");
  auto fp = file_fingerprint(test::tiny_llama());
  REQUIRE(fp.ok());
  ledger::Flags f;
  f.ngl = -1;
  f.ctx = 2048;
  ledger::Measured m;
  m.compute_gpu = 3 * ledger::kMiB;
  REQUIRE(ledger::record_measurement(dir / "state", ledger::measurement_key(*fp, f, {}), m).ok());
  const auto r = plan(dir, "--json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["profiles"][0]["measured"]["compute_gpu"] == 3 * ledger::kMiB);
  CHECK(j["profiles"][0]["effective"]["compute_gpu"] == 3 * ledger::kMiB);
  CHECK(j["profiles"][0]["estimate"]["compute_gpu"] != 3 * ledger::kMiB);
  const auto text = plan(dir, "");
  CHECK(text.output.find("  measured") != std::string::npos);
}

TEST_CASE("plan CLI: an adapter for another base is refused naming the tensor") {
  test::TempDir dir("plan-cli-lora");
  gguf::TinyModelSpec base;
  gguf::TinyModelSpec wide;
  wide.n_embd = 128;
  REQUIRE(gguf::write_tiny_model(dir / "base.gguf", base).ok());
  REQUIRE(gguf::write_tiny_lora(dir / "wrong.gguf", wide, gguf::TinyLoraSpec{}).ok());
  write_config(dir, dir / "base.gguf", "lora:\n  - path: " + (dir / "wrong.gguf").string() + "\n", "");
  const auto r = plan(dir, "");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("blk.0.attn_q.weight") != std::string::npos);
}

TEST_CASE("plan CLI: reports how much of each model file is in the page cache") {
  test::TempDir dir("plan-cli-pagecache");
  // A private copy, so evicting it cannot disturb other tests; read fully -> resident.
  const auto model = dir / "copy.gguf";
  fs::copy_file(test::tiny_llama(), model);
  (void)test::read_text(model);
  write_config(dir, model, "", "");
  const auto j = nlohmann::json::parse(plan(dir, "--json").output);
  REQUIRE(j.contains("page_cache_pct"));
  CHECK(j["page_cache_pct"]["kev"].get<double>() == Approx(100.0));
  CHECK(j["page_cache_pct"]["laya"].get<double>() == Approx(100.0));
  const auto text = plan(dir, "").output;
  CHECK(text.find("page cache") != std::string::npos);
  CHECK(text.find("kev: 100 %") != std::string::npos);
}

TEST_CASE("plan CLI: gpu.devices: each GPU and what is placed on it, text and JSON") {
  test::TempDir dir("plan-cli-gpus");
  // Two 700 MiB cards: each child (450 MiB overhead + buffers) fits one alone, never two together.
  test::write_text(dir / "kevlaya.yaml",
                   "profiles_dir: profiles\nstate_dir: state\ngpu:\n  reserve_mib: 0\n  devices:\n"
                   "    - {vram_mib: 700, name: sim0}\n    - {vram_mib: 700}\n");
  const auto model = test::tiny_llama().string();
  for (const std::string name : {"kev", "laya", "judge"})
    test::write_text(dir / ("profiles/" + name + ".yaml"),
                     "name: " + name + "\nmodel: " + model + "\nshared_base: false\n" + (name == "judge" ? "gpu: 1\n" : ""));
  auto r = plan(dir, "--json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["devices"].size() == 2);
  CHECK(j["devices"][0]["name"] == "sim0");
  CHECK(j["devices"][0]["vram_mib"] == 700);
  CHECK(j["placement"]["judge"]["gpus"] == nlohmann::json::array({1}));
  CHECK(j["placement"]["kev"]["gpus"] == nlohmann::json::array({0}));   // gpu 1 already has judge
  CHECK(j["placement"]["laya"]["gpus"] == nlohmann::json::array({0}));  // fits beside nothing: rotates
  CHECK(j["devices"][0]["rotates"] == true);
  CHECK(j["devices"][1]["rotates"] == false);
  CHECK(j["mode"] == "rotate");
  r = plan(dir, "");
  CHECK(r.output.find("gpu 0 (sim0): 700.00 MiB, budget 700.00 MiB: kev | laya  (rotates") != std::string::npos);
  CHECK(r.output.find("gpu 1: 700.00 MiB, budget 700.00 MiB: judge  (stays loaded)") != std::string::npos);
}

TEST_CASE("plan CLI: a profile's gpu that NVML-less planning cannot hold is refused, exit 1") {
  test::TempDir dir("plan-cli-gpu-refused");
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\ngpu:\n  vram_mib: 300\n");
  test::write_text(dir / "profiles/kev.yaml", "name: kev\nmodel: " + test::tiny_llama().string() + "\ngpu: 1\n");
  const auto r = plan(dir, "");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("error: kev: gpu: 1 names gpu 1, but the machine has 1 GPU(s), 0 to 0") != std::string::npos);
}

// Without a GPU budget, check and plan say what serve will do: host RAM decides (docs/ledger.md).
TEST_CASE("check and plan CLI: without a GPU budget they report the residency host RAM allows") {
  test::TempDir dir("plan-cli-ram");
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\n");
  for (const char* n : {"kev", "laya"})
    test::write_text(dir / "profiles" / (std::string(n) + ".yaml"),
                     std::string("name: ") + n + "\nmodel: " + test::tiny_llama().string() + "\nngl: 0\nctx: 256\n");
  const auto check = test::run_command(test::orch_binary().string() + " check " + (dir / "kevlaya.yaml").string() + " 2>&1");
  INFO(check.output);
  if (check.output.find("by host RAM") == std::string::npos) KEVLAYA_SKIP("an NVIDIA GPU answered: the VRAM ledger plans");
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("ledger: co-resident by host RAM: ") != std::string::npos);
  CHECK(check.output.find("MiB of host RAM together, budget ") != std::string::npos);
  const auto p = plan(dir, "2>&1");
  INFO(p.output);
  CHECK(p.exit_code == 1);  // a GPU plan needs a budget
  CHECK(p.output.find("without them, serve runs co-resident by host RAM") != std::string::npos);
}

namespace {

// A child cgroup of this process's memory cgroup with `limit_mib`, removed on destruction; empty
// path when this machine does not let the test make one (not root, no memory controller).
struct MemoryCgroup {
  fs::path dir;
  explicit MemoryCgroup(std::uint64_t limit_mib) {
    std::ifstream self("/proc/self/cgroup");
    for (std::string line; std::getline(self, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      const auto controllers = line.substr(a + 1, b - a - 1);
      const fs::path path = fs::path(line.substr(b + 1)).relative_path();
      fs::path base;
      std::string limit_file;
      if (("," + controllers + ",").find(",memory,") != std::string::npos) {
        base = fs::path("/sys/fs/cgroup/memory") / path, limit_file = "memory.limit_in_bytes";
      } else if (controllers.empty() && fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
        base = fs::path("/sys/fs/cgroup") / path, limit_file = "memory.max";
      } else {
        continue;
      }
      std::error_code ec;
      const auto d = base / ("kevlaya-test-" + std::to_string(::getpid()));
      if (!fs::create_directory(d, ec) || ec) continue;
      std::ofstream(d / limit_file) << (limit_mib << 20);
      std::ifstream check(d / limit_file);
      std::uint64_t got = 0;
      if (check >> got && got == (limit_mib << 20)) {
        dir = d;
        return;
      }
      fs::remove(d, ec);
    }
  }
  ~MemoryCgroup() {
    std::error_code ec;
    if (!dir.empty()) fs::remove(dir, ec);  // empty again: the command it ran has exited
  }
};

double needed_mib(const std::string& check_output) {
  std::smatch m;
  return std::regex_search(check_output, m, std::regex("the profiles need\\s+([0-9.]+)\\s+MiB")) ? std::stod(m[1]) : -1;
}

}  // namespace

// In a container the kernel enforces the cgroup's memory limit, which /proc/meminfo does not show:
// the budget is the limit's headroom (docs/ledger.md, "No GPU"). Regression: a limit too small for
// both profiles planned them co-resident by the host's MemAvailable.
TEST_CASE("check CLI in a memory cgroup too small for both profiles: they rotate, with or without a GPU budget") {
  test::TempDir dir("plan-cli-cgroup");
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\n");
  for (const char* n : {"kev", "laya"})
    test::write_text(dir / "profiles" / (std::string(n) + ".yaml"),
                     std::string("name: ") + n + "\nmodel: " + test::tiny_llama().string() +
                         "\nngl: 0\nctx: 262144\nshared_base: false\n");  // two children
  const std::string check = test::orch_binary().string() + " check " + (dir / "kevlaya.yaml").string() + " 2>&1";
  const auto outside = test::run_command(check);
  INFO(outside.output);
  if (outside.output.find("by host RAM") == std::string::npos) KEVLAYA_SKIP("an NVIDIA GPU answered: the VRAM ledger plans");
  REQUIRE(outside.output.find("ledger: co-resident by host RAM: ") != std::string::npos);
  const double need = needed_mib(outside.output);
  REQUIRE(need > 1024);  // large next to the check process's own use of the cgroup
  // The 1024 MiB reserve plus half of what both profiles need.
  MemoryCgroup cg(1024 + static_cast<std::uint64_t>(need / 2));
  if (cg.dir.empty()) KEVLAYA_SKIP("cannot make a memory cgroup here (not root, or no memory controller)");
  const auto inside = test::run_command("sh -c 'echo $$ > " + (cg.dir / "cgroup.procs").string() + " && exec " + check + "'");
  INFO(inside.output);
  CHECK(inside.exit_code == 0);
  CHECK(inside.output.find("ledger: rotate by host RAM: ") != std::string::npos);
  CHECK(needed_mib(inside.output) == Approx(need));
  std::smatch m;  // the budget is the cgroup's headroom less the reserve, whatever the host has free
  REQUIRE(std::regex_search(inside.output, m, std::regex("budget\\s+([0-9.]+)\\s+MiB")));
  CHECK(std::stod(m[1]) > 0);
  CHECK(std::stod(m[1]) <= need / 2 + 1);
  // With a GPU budget the two ngl 0 children cost the GPU nothing, but host RAM still bounds them.
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\ngpu:\n  vram_mib: 8192\n");
  const auto gpu_outside = test::run_command(check);
  INFO(gpu_outside.output);
  CHECK(gpu_outside.output.find("residency: co-resident") != std::string::npos);
  const auto gpu_inside = test::run_command("sh -c 'echo $$ > " + (cg.dir / "cgroup.procs").string() + " && exec " + check + "'");
  INFO(gpu_inside.output);
  CHECK(gpu_inside.exit_code == 0);
  CHECK(gpu_inside.output.find("residency: rotate") != std::string::npos);
  CHECK(gpu_inside.output.find("they rotate instead") != std::string::npos);
  CHECK(gpu_inside.output.find("  (rotate)") != std::string::npos);  // the device's line says so too
}

namespace {

// kev (pinned unless `pin` is false), laya and x on the project's model, three children; `ctx`
// sizes each one's KV.
std::string write_pinned_trio(const test::TempDir& dir, const std::string& ctx, const std::string& top = "",
                              bool pin = true) {
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\n" + top);
  for (const char* n : {"kev", "laya", "x"})
    test::write_text(dir / "profiles" / (std::string(n) + ".yaml"),
                     std::string("name: ") + n + "\nmodel: " + test::tiny_llama().string() + "\nngl: 0\nctx: " + ctx +
                         "\nshared_base: false\n" + (pin && n == std::string("kev") ? "pin: true\n" : ""));
  return test::orch_binary().string() + " check " + (dir / "kevlaya.yaml").string() + " 2>&1";
}

}  // namespace

// Regression: without a GPU a pin was refused unless host RAM held every profile at once ("set
// gpu.vram_mib"), and always under `residency: rotate`; the others now rotate beside it.
TEST_CASE("check CLI without a GPU: a pin under rotate stays resident and the others rotate beside it") {
  test::TempDir dir("plan-cli-pin-rotate");
  const auto r = test::run_command(write_pinned_trio(dir, "256", "residency: rotate\n"));
  INFO(r.output);
  if (r.output.find("by host RAM") == std::string::npos) KEVLAYA_SKIP("an NVIDIA GPU answered: the VRAM ledger plans");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("ledger: rotate by host RAM: ") != std::string::npos);
  CHECK(r.output.find("ledger: resident sets: [kev, laya] [kev, x]") != std::string::npos);
  const auto p = plan(dir, "2>&1");  // plan, which needs a GPU budget, says what serve does instead
  INFO(p.output);
  CHECK(p.output.find("without them, serve runs rotate by host RAM") != std::string::npos);
  CHECK(p.output.find("resident sets: [kev, laya] [kev, x]") != std::string::npos);
}

// Host RAM (a memory cgroup's limit) holds kev with one partner, not with both: each partner in
// turn beside the pin; with room for kev alone, neither partner could ever start: refused.
TEST_CASE("check CLI without a GPU in a memory cgroup: the largest groups that fit take turns, a pin in each, or it is refused") {
  test::TempDir dir("plan-cli-pin-cgroup");
  const auto check = write_pinned_trio(dir, "262144");
  const auto outside = test::run_command(check);
  INFO(outside.output);
  if (outside.output.find("by host RAM") == std::string::npos) KEVLAYA_SKIP("an NVIDIA GPU answered: the VRAM ledger plans");
  REQUIRE(outside.output.find("ledger: co-resident by host RAM: ") != std::string::npos);
  const double need = needed_mib(outside.output);  // all three
  REQUIRE(need > 1024);
  const auto in_cgroup = [&](double share) {
    MemoryCgroup cg(1024 + static_cast<std::uint64_t>(need * share));
    if (cg.dir.empty()) return test::CmdResult{};
    return test::run_command("sh -c 'echo $$ > " + (cg.dir / "cgroup.procs").string() + " && exec " + check + "'");
  };
  const auto pairs = in_cgroup(0.8);  // two of three fit (2/3 of the need), three do not
  if (pairs.exit_code == -1) KEVLAYA_SKIP("cannot make a memory cgroup here (not root, or no memory controller)");
  INFO(pairs.output);
  CHECK(pairs.exit_code == 0);
  CHECK(pairs.output.find("ledger: rotate by host RAM: ") != std::string::npos);
  CHECK(pairs.output.find("ledger: resident sets: [kev, laya] [kev, x]") != std::string::npos);
  const auto alone = in_cgroup(0.5);  // kev fits, kev with a partner does not
  INFO(alone.output);
  CHECK(alone.exit_code == 1);
  CHECK(alone.output.find("profile laya: does not fit beside the pinned kev") != std::string::npos);
  CHECK(alone.output.find("profile x: does not fit beside the pinned kev") != std::string::npos);
  // Unpinned, the same room keeps any two together: three pairs take turns instead of one child.
  write_pinned_trio(dir, "262144", "", false);
  const auto unpinned = in_cgroup(0.8);
  INFO(unpinned.output);
  CHECK(unpinned.exit_code == 0);
  CHECK(unpinned.output.find("ledger: rotate by host RAM: ") != std::string::npos);
  CHECK(unpinned.output.find("ledger: resident sets: [kev, laya] [kev, x] [laya, x]") != std::string::npos);
}
