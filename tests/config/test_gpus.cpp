// GPU keys: gpu.devices (with gpu.vram_mib as the one-device shorthand), a profile's `gpu:`, and the
// placement's flags and environment in the child's argv.
#include <catch2/catch.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

cfg::LoadResult load_with(const TempDir& dir, const std::string& orch, const std::string& profile) {
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\n" + orch);
  write_text(dir / "profiles/m.gguf", "GGUF dummy");
  write_text(dir / "profiles/kev.yaml", "name: kev\nmodel: m.gguf\n" + profile);
  return cfg::load(dir / "kevlaya.yaml");
}

}  // namespace

TEST_CASE("gpus: gpu.devices lists each GPU with its memory and an optional name", "[config]") {
  TempDir dir("cfg-gpu");
  const auto r = load_with(dir, "gpu:\n  devices:\n    - {vram_mib: 6144}\n    - {vram_mib: 8192, name: GTX 1080}\n", "gpu: 1\n");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& g = r.config.orch.gpu;
  REQUIRE(g.devices.size() == 2);
  CHECK(g.devices[0].vram_mib == 6144);
  CHECK(g.devices[0].name.empty());
  CHECK(g.devices[1].vram_mib == 8192);
  CHECK(g.devices[1].name == "GTX 1080");
  CHECK_FALSE(g.vram_mib.has_value());
  CHECK(r.config.profiles[0].gpu == std::vector<int>{1});
}

TEST_CASE("gpus: gpu.vram_mib and gpu.devices together are an error at vram_mib", "[config]") {
  TempDir dir("cfg-gpu");
  const auto r = load_with(dir, "gpu:\n  vram_mib: 6144\n  devices: [{vram_mib: 8192}]\n", "");
  CHECK(has_diag(r, diag(dir / "kevlaya.yaml", 3, 13,
                         "gpu.vram_mib and gpu.devices are both set: vram_mib is the one-device shorthand; "
                         "list every device under gpu.devices instead")));
}

TEST_CASE("gpus: a device without vram_mib, and an empty list, are errors", "[config]") {
  TempDir dir("cfg-gpu");
  auto r = load_with(dir, "gpu:\n  devices:\n    - {name: x}\n", "");
  CHECK(has_diag(r, diag(dir / "kevlaya.yaml", 4, 7, "gpu.devices[0]: missing required key 'vram_mib'")));
  r = load_with(dir, "gpu:\n  devices: []\n", "");
  CHECK_FALSE(r.ok());
}

TEST_CASE("gpus: a profile's gpu is auto, an index or a list (sorted)", "[config]") {
  TempDir dir("cfg-gpu");
  CHECK(load_with(dir, "", "gpu: auto\n").config.profiles[0].gpu.empty());
  CHECK(load_with(dir, "", "").config.profiles[0].gpu.empty());
  CHECK(load_with(dir, "", "gpu: [1, 0]\n").config.profiles[0].gpu == std::vector<int>{0, 1});
  const auto twice = load_with(dir, "", "gpu: [1, 1]\n");
  CHECK(has_diag(twice, diag(dir / "profiles/kev.yaml", 3, 10, "gpu: device 1 is listed twice")));
  CHECK_FALSE(load_with(dir, "", "gpu: []\n").ok());
  CHECK_FALSE(load_with(dir, "", "gpu: -1\n").ok());
  CHECK_FALSE(load_with(dir, "", "gpu: {a: 1}\n").ok());
}

TEST_CASE("gpus: a profile naming a GPU that gpu.devices does not list is an error at its gpu key", "[config]") {
  TempDir dir("cfg-gpu");
  const auto r = load_with(dir, "gpu:\n  devices: [{vram_mib: 6144}, {vram_mib: 8192}]\n", "gpu: [0, 2]\n");
  CHECK(has_diag(r, diag(dir / "profiles/kev.yaml", 3, 6,
                         "profile 'kev': gpu 2 does not exist; gpu.devices lists 2 device(s), 0 to 1")));
}

TEST_CASE("gpus: env CUDA_VISIBLE_DEVICES and extra_args --tensor-split are refused: the placement owns them", "[config]") {
  TempDir dir("cfg-gpu");
  const auto env = load_with(dir, "", "env: {CUDA_VISIBLE_DEVICES: \"1\"}\n");
  CHECK(has_diag(env, diag(dir / "profiles/kev.yaml", 3, 6,
                           "env sets CUDA_VISIBLE_DEVICES, which kevlaya-orch sets from the GPU placement; use the "
                           "profile key 'gpu' (e.g. gpu: 1) instead")));
  const auto ts = load_with(dir, "", "extra_args: [--tensor-split, \"3,1\"]\n");
  CHECK(has_diag(ts, diag(dir / "profiles/kev.yaml", 3, 14,
                          "extra_args sets '--tensor-split', which kevlaya-orch chooses for each spawn from the GPU "
                          "placement; use the profile key 'gpu' instead")));
  CHECK_FALSE(load_with(dir, "", "extra_args: [-mg, \"1\"]\n").ok());
  CHECK_FALSE(load_with(dir, "", "extra_args: [--device, CUDA1]\n").ok());
}

TEST_CASE("gpus: a split placement adds --main-gpu and --tensor-split, the environment names the devices", "[config]") {
  cfg::Profile p;
  p.name = "big";
  p.model = "/m/big.gguf";
  p.placement.devices = {0, 1};
  p.placement.visible = "0,1";
  p.placement.split = {5888, 7936};
  p.placement.main_gpu = 1;
  CHECK(cfg::build_argv(p, "127.0.0.1", 9000) ==
        std::vector<std::string>{"llama-server", "-m", "/m/big.gguf", "-ngl", "all", "-c", "2048", "-np", "1",
                                 "--host", "127.0.0.1", "--port", "9000", "--alias", "big", "--main-gpu", "1",
                                 "--tensor-split", "5888,7936", "--metrics", "-lv", "4"});
  CHECK(cfg::placement_env(p.placement) ==
        std::vector<std::pair<std::string, std::string>>{{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                                                         {"CUDA_VISIBLE_DEVICES", "0,1"}});
  p.placement = {{1}, "1", {}, 0};  // one device: only the environment
  CHECK(cfg::build_argv(p, "127.0.0.1", 9000).size() == 18);
  CHECK(cfg::placement_env(cfg::DevicePlacement{}).empty());
}
