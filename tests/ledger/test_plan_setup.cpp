// The ledger wired into the product (runtime/plan_setup): plan -> supervisor options, the -lv 4 flag
// children need for calibration, and recording a child's load into the measurement store.
#include <catch2/catch.hpp>
#include <algorithm>

#include "runtime/plan_setup.hpp"
#include "fixtures.hpp"
#include "ledger/calibration.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;

namespace {

ProfileInput shared(const std::string& name, const std::string& adapter, double scale) {
  ProfileInput p;
  p.name = name;
  p.model = test::stories260k_info();
  p.flags.ctx = 256;
  p.share_key = "same";
  p.adapters = {{adapter, "/l/" + adapter + ".gguf", kMiB, scale}};
  return p;
}

constexpr const char* kLoad =
    "2024-01-01T00:00:00.000 [kev] 0.00.036.791 I load_tensors: loading model tensors, this can take a while...\n"
    "2024-01-01T00:00:00.001 [kev] 0.00.037.758 I load_tensors:   CPU_Mapped model buffer size =     1.32 MiB\n"
    "2024-01-01T00:00:00.002 [kev] 0.00.038.013 I llama_adapter_lora_init_impl: CPU_Mapped LoRA buffer size =     0.05 MiB\n"
    "2024-01-01T00:00:00.003 [kev] 0.00.039.359 I llama_kv_cache:        CPU KV buffer size =     0.25 MiB\n";

}  // namespace

TEST_CASE("plan setup: a shared-base plan hands the supervisor its ChildSpec and allowed sets in child names") {
  const auto plan = make_plan({shared("kev", "a", 1.0), shared("laya", "b", 0.5)}, PlanOptions{8192 * kMiB, 0, {}});
  REQUIRE(plan.shared_children().size() == 1);
  const auto o = runtime::options_from_plan(plan);
  CHECK(plan.allowed_sets == std::vector<std::vector<std::string>>{{"kev", "laya"}});
  CHECK(o.allowed_sets == std::vector<std::vector<std::string>>{{"kev+laya"}});  // one child
  REQUIRE(o.children.size() == plan.children.size());  // every child, lone or shared
  const auto shared = std::find_if(o.children.begin(), o.children.end(), [](const auto& c) { return c.shared(); });
  REQUIRE(shared != o.children.end());
  const auto& g = *shared;
  CHECK(g.name == "kev+laya");
  CHECK(g.members == std::vector<std::string>{"kev", "laya"});
  REQUIRE(g.adapters.size() == 2);
  CHECK(g.adapters[1].path == "/l/b.gguf");
  CHECK(g.scales.at("kev") == std::vector<LoraScale>{{0, 1.0}, {1, 0.0}});
  CHECK(g.scales.at("laya") == std::vector<LoraScale>{{0, 0.0}, {1, 0.5}});
  CHECK(plan.child_of("laya") == "kev+laya");
  CHECK(plan.child_of("nobody") == "nobody");
}

TEST_CASE("plan setup: a child's load is recorded under every key it serves") {
  test::TempDir dir("plan-setup-record");
  test::write_text(dir / "logs/kev.log", std::string("old run noise\n") + kLoad + "request trace lines\n");
  CHECK(runtime::record_child_load(dir / "logs/kev.log", dir / "state", {"k1"}, false) == 1);
  CHECK(runtime::record_child_load(dir / "logs/kev.log", dir / "state", {"k2", "k3"}, true) == 2);
  CHECK(runtime::record_child_load(dir / "logs/missing.log", dir / "state", {"k4"}, false) == 0);
  const auto store = load_store(store_path(dir / "state"));
  REQUIRE(store.ok());
  CHECK(store->size() == 3);
  CHECK(store->at("k1").weights_cpu == 1384120);  // 1.32 MiB
  CHECK(store->at("k1").adapters_cpu.has_value());
  CHECK(store->at("k2").kv_cpu == kMiB / 4);
  CHECK_FALSE(store->at("k3").adapters_cpu.has_value());  // a group's child loads every member's adapters
}
