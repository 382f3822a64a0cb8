// GPU placement over device lists (1x6 GB, 6+8 GB, 2x24 GB, 4x8 GB) with the reference profiles'
// bills: where each child goes, refusals, splits, and the switches a 50-task pipeline needs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "fixtures.hpp"
#include "ledger/placement.hpp"
#include "pipeline/planner.hpp"
#include "supervisor/scheduler.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;
using kevlaya::test::q4ks_3b_info;
using kevlaya::test::q4ks_7b_info;

namespace {
constexpr std::uint64_t kPlacementOverhead = 450 * kMiB;
constexpr std::uint64_t kReserve = 256 * kMiB;
using Sets = std::vector<std::vector<std::string>>;

// The reference profiles (profiles/kev.yaml, profiles/laya.yaml).
ProfileInput placement_kev() { return test::reference_kev(); }
ProfileInput placement_laya() { return test::reference_laya(); }

// A third 7B with a long context: fits an 8 GB card alone, not a 6 GB one.
ProfileInput judge() {
  ProfileInput p = placement_kev();
  p.name = "judge";
  p.model = q4ks_7b_info("/models/judge-7b.Q4_K_S.gguf");
  p.flags.ngl = -1;
  p.flags.ctx = 12288;
  return p;
}

// A 70-layer 7B-width model: about 9 GB of weights, more than any 8 GB card.
ProfileInput big() {
  ProfileInput p = placement_kev();
  p.name = "big";
  p.model = q4ks_7b_info("/models/big.gguf");
  p.model.n_layer = 70;
  p.model.layer_bytes.assign(70, p.model.layer_bytes[0]);
  p.flags.ngl = -1;
  return p;
}

Device gpu(int index, std::uint64_t mib, std::string name = {}) {
  return Device{index, std::move(name), {}, mib * kMiB, mib * kMiB - kReserve};
}

PlanOptions opts(config::Residency r = config::Residency::auto_) { return PlanOptions{0, kPlacementOverhead, r}; }

std::uint64_t placement_alone(const ProfileInput& p) {
  return estimate(p.model, p.output_tied, p.flags, p.adapters, kPlacementOverhead).total_gpu();
}

std::vector<int> on(const PlacedPlan& pp, const std::string& name) {
  const auto it = pp.placement.find(name);
  return it == pp.placement.end() ? std::vector<int>{} : it->second.devices;
}

std::string error_of(const PlacedPlan& pp, const std::string& subject) {
  for (const auto& d : pp.plan.diagnostics) {
    if (d.severity == config::Severity::error && d.subject == subject) return d.message;
  }
  return {};
}

// The sets as sorted lists, so that order inside a set does not matter.
std::set<std::set<std::string>> as_sets(const Sets& sets) {
  std::set<std::set<std::string>> out;
  for (const auto& s : sets) out.insert(std::set<std::string>(s.begin(), s.end()));
  return out;
}

// Switches (a child stopped so that another may start) that a decide->verify run of `tasks` tasks
// needs under `sets`, the batches ordered by the pipeline planner; every `reject_every`-th task is
// rejected once. Eviction as the scheduler does it: keep the allowed set overlapping the most.
int switches_for_run(const Sets& sets, std::size_t tasks, pipeline::Order order, std::size_t reject_every = 0) {
  pipeline::Planner planner({{"kev", config::StageRole::decide}, {"laya", config::StageRole::verify}}, 3, tasks, order);
  std::vector<std::string> alive;
  std::string loaded;
  int switches = 0;
  std::set<std::size_t> rejected;
  while (!planner.done()) {
    const auto batch = planner.next_batch(loaded);
    REQUIRE_FALSE(batch.empty());
    loaded = planner.model_of(batch.front());
    if (std::find(alive.begin(), alive.end(), loaded) == alive.end()) {
      auto with = alive;
      with.push_back(loaded);
      if (!supervisor::may_coreside(with, sets)) {
        ++switches;
        const std::vector<std::string>* best = nullptr;
        std::size_t overlap = 0;
        for (const auto& s : sets) {
          if (std::find(s.begin(), s.end(), loaded) == s.end()) continue;
          const auto n = static_cast<std::size_t>(std::count_if(
              alive.begin(), alive.end(), [&](const auto& a) { return std::find(s.begin(), s.end(), a) != s.end(); }));
          if (!best || n > overlap) best = &s, overlap = n;
        }
        REQUIRE(best);
        std::erase_if(with, [&](const auto& a) { return std::find(best->begin(), best->end(), a) == best->end(); });
      }
      alive = with;
    }
    for (const auto& item : batch) {
      const bool reject = planner.model_of(item) == "laya" && reject_every && item.task % reject_every == 0 &&
                          rejected.insert(item.task).second;
      planner.complete(item, reject ? pipeline::Outcome::reject : pipeline::Outcome::advance);
    }
  }
  return switches;
}
}  // namespace

TEST_CASE("placement: the reference bills (kev ~4.7 GiB, laya ~2.8 GiB) that the cases below rely on") {
  CHECK(placement_alone(placement_kev()) > 4500 * kMiB);
  CHECK(placement_alone(placement_kev()) < 5888 * kMiB);  // fits the 6 GB card alone
  CHECK(placement_alone(placement_laya()) < 5888 * kMiB);
  CHECK(placement_alone(placement_kev()) + placement_alone(placement_laya()) > 5888 * kMiB);  // not together
  CHECK(placement_alone(judge()) > 5888 * kMiB);  // too big for 6 GB, fits 8 GB
  CHECK(placement_alone(judge()) < 7936 * kMiB);
  CHECK(placement_alone(big()) > 7936 * kMiB);  // too big for any 8 GB card
}

TEST_CASE("placement: 1x6 GB: kev and laya rotate on gpu 0, exactly the single-budget plan") {
  const auto pp = place({placement_kev(), placement_laya()}, {gpu(0, 6144)}, opts());
  const auto single = make_plan({placement_kev(), placement_laya()}, PlanOptions{5888 * kMiB, kPlacementOverhead, config::Residency::auto_});
  CHECK(pp.plan.allowed_sets == single.allowed_sets);
  CHECK(pp.plan.allowed_sets == Sets{{"kev"}, {"laya"}});
  CHECK(pp.plan.mode == Mode::rotate);
  CHECK(pp.plan.ok());
  CHECK(on(pp, "kev") == std::vector<int>{0});
  CHECK(on(pp, "laya") == std::vector<int>{0});
  REQUIRE(pp.devices.size() == 1);
  CHECK(pp.devices[0].rotates());
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::stage_major) == 1);
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::stage_major, 5) == 3);
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::task_major) == 99);
}

TEST_CASE("placement: 6+8 GB: kev and laya on different GPUs, co-resident, a pipeline needs no switch") {
  const auto pp = place({placement_kev(), placement_laya()}, {gpu(0, 6144), gpu(1, 8192)}, opts());
  CHECK(pp.plan.ok());
  CHECK(on(pp, "kev") == std::vector<int>{1});  // the biggest first, where the most room is left
  CHECK(on(pp, "laya") == std::vector<int>{0});
  CHECK(as_sets(pp.plan.allowed_sets) == as_sets(Sets{{"kev", "laya"}}));
  CHECK(pp.plan.mode == Mode::co_resident);
  CHECK_FALSE(pp.devices[0].rotates());
  CHECK_FALSE(pp.devices[1].rotates());
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::stage_major, 5) == 0);
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::task_major) == 0);
}

TEST_CASE("placement: 6+8 GB with a third model: it rotates only on the GPU where it fits") {
  const auto pp = place({placement_kev(), placement_laya(), judge()}, {gpu(0, 6144), gpu(1, 8192)}, opts());
  CHECK(pp.plan.ok());
  CHECK(on(pp, "judge") == std::vector<int>{1});  // only the 8 GB card holds it
  CHECK(on(pp, "kev") == std::vector<int>{0});
  CHECK(on(pp, "laya") == std::vector<int>{1});  // fits beside neither: rotates with judge
  CHECK_FALSE(pp.devices[0].rotates());
  CHECK(pp.devices[1].rotates());
  CHECK(as_sets(pp.devices[1].allowed_sets) == as_sets(Sets{{"judge"}, {"laya"}}));
  CHECK(as_sets(pp.plan.allowed_sets) == as_sets(Sets{{"kev", "judge"}, {"kev", "laya"}}));
  CHECK(pp.plan.mode == Mode::rotate);
  // Kev and Laya may live together: the decide->verify run still needs no switch.
  CHECK(switches_for_run(pp.plan.allowed_sets, 50, pipeline::Order::stage_major, 5) == 0);
}

TEST_CASE("placement: 2x24 GB: both would fit one card, they are spread over both") {
  const auto pp = place({placement_kev(), placement_laya()}, {gpu(0, 24576), gpu(1, 24576)}, opts());
  CHECK(on(pp, "kev") == std::vector<int>{0});
  CHECK(on(pp, "laya") == std::vector<int>{1});
  CHECK(pp.plan.mode == Mode::co_resident);
  CHECK(pp.plan.diagnostics.empty());
}

TEST_CASE("placement: 4x8 GB: a model no card holds is split over two, the others get a card each") {
  const std::vector<Device> devs = {gpu(0, 8192), gpu(1, 8192), gpu(2, 8192), gpu(3, 8192)};
  const auto pp = place({placement_kev(), placement_laya(), big()}, devs, opts());
  CHECK(pp.plan.ok());
  REQUIRE(pp.placement.count("big"));
  const auto& split = pp.placement.at("big");
  CHECK(split.devices == std::vector<int>{0, 1});
  REQUIRE(split.bytes.size() == 2);
  CHECK(split.bytes[0] <= devs[0].budget);
  CHECK(split.bytes[1] <= devs[1].budget);
  // Each card pays a compute buffer and the CUDA context: the halves sum to more than the whole.
  CHECK(split.bytes[0] + split.bytes[1] > placement_alone(big()));
  CHECK(on(pp, "kev") == std::vector<int>{2});
  CHECK(on(pp, "laya") == std::vector<int>{3});
  CHECK(as_sets(pp.plan.allowed_sets) == as_sets(Sets{{"big", "kev", "laya"}}));
  const auto spawn = spawn_placement(split, devs);
  CHECK(spawn.visible == "0,1");
  CHECK(spawn.split == std::vector<std::int64_t>{7936, 7936});
  CHECK(spawn_placement(pp.placement.at("kev"), devs).visible == "2");
  CHECK(spawn_placement(pp.placement.at("kev"), devs).split.empty());
}

// Issue 35: the placed plan lists every child once as a ChildSpec (a split one is in no device's
// plan), and the host figures the supervisor checks come from those specs.
TEST_CASE("placement: every placed child has one spec, a split one included, with its host figures") {
  const std::vector<Device> devs = {gpu(0, 8192), gpu(1, 8192), gpu(2, 8192), gpu(3, 8192)};
  const auto pp = place({placement_kev(), placement_laya(), big()}, devs, opts());
  std::vector<std::string> names;
  for (const auto& c : pp.plan.children) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"big", "kev", "laya"});
  REQUIRE(pp.plan.child_spec("big") != nullptr);
  CHECK(pp.plan.child_spec("big")->bill.total_gpu() == placement_alone(big()));
  const auto host = child_host_bytes(pp.plan, false);
  CHECK(host.size() == 3);
  CHECK(host.at("big") == host_bytes(big()));
  CHECK(host.at("kev") == host_bytes(placement_kev()));
}

TEST_CASE("placement: a split child rotates alone on its devices, others there take turns with it") {
  const std::vector<Device> devs = {gpu(0, 6144), gpu(1, 6144)};
  const auto pp = place({big(), placement_kev()}, devs, opts());
  CHECK(pp.plan.ok());
  CHECK(on(pp, "big") == std::vector<int>{0, 1});
  CHECK(on(pp, "kev") == std::vector<int>{0});
  CHECK(as_sets(pp.plan.allowed_sets) == as_sets(Sets{{"big"}, {"kev"}}));
}

TEST_CASE("placement: what no placement holds is refused with a sentence") {
  auto huge = big();
  huge.name = "huge";
  huge.model.n_layer = 200;
  huge.model.layer_bytes.assign(200, huge.model.layer_bytes[0]);
  const auto pp = place({huge, placement_kev()}, {gpu(0, 6144), gpu(1, 8192)}, opts());
  CHECK_FALSE(pp.plan.ok());
  CHECK(pp.placement.count("huge") == 0);
  const auto msg = error_of(pp, "huge");
  CHECK_THAT(msg, Catch::Contains("cannot fit even alone"));
  CHECK_THAT(msg, Catch::Contains("split over all 2 GPUs it would still need"));
  CHECK(on(pp, "kev") == std::vector<int>{1});  // the rest is still placed
  for (const auto& s : pp.plan.allowed_sets) CHECK(std::find(s.begin(), s.end(), "huge") == s.end());
}

TEST_CASE("placement: gpu: N is obeyed, or refused when the card is missing or too small") {
  auto k = placement_kev();
  k.gpu = {0};
  auto l = placement_laya();
  l.gpu = {0};
  const auto pp = place({k, l}, {gpu(0, 6144), gpu(1, 8192)}, opts());
  CHECK(on(pp, "kev") == std::vector<int>{0});
  CHECK(on(pp, "laya") == std::vector<int>{0});
  CHECK(pp.devices[0].rotates());  // both asked for gpu 0, where they do not fit together
  CHECK(pp.devices[1].allowed_sets.empty());

  k.gpu = {1};
  const auto missing = place({k}, {gpu(0, 6144)}, opts());
  CHECK_THAT(error_of(missing, "kev"), Catch::Contains("names gpu 1, but the machine has 1 GPU(s)"));

  auto j = judge();
  j.gpu = {0};
  const auto small = place({j}, {gpu(0, 6144), gpu(1, 8192)}, opts());
  CHECK_THAT(error_of(small, "judge"), Catch::Contains("gpu: 0 cannot hold it"));
  CHECK_THAT(error_of(small, "judge"), Catch::Contains("budget is 5888.00 MiB"));
}

TEST_CASE("placement: gpu: [0, 1] splits in the ratio of the device budgets") {
  auto k = placement_kev();
  k.gpu = {0, 1};
  const std::vector<Device> devs = {gpu(0, 6144, "RTX 3060"), gpu(1, 8192, "GTX 1080")};
  const auto pp = place({k}, devs, opts());
  REQUIRE(pp.placement.count("kev"));
  const auto& p = pp.placement.at("kev");
  CHECK(p.devices == std::vector<int>{0, 1});
  CHECK(p.bytes[1] > p.bytes[0]);  // the bigger card takes more layers
  const auto spawn = spawn_placement(p, devs);
  CHECK(spawn.split == std::vector<std::int64_t>{5888, 7936});
  CHECK(spawn.main_gpu == 1);
  CHECK(spawn.visible == "0,1");
}

TEST_CASE("placement: NVML's UUIDs name the devices in CUDA_VISIBLE_DEVICES") {
  std::vector<Device> devs = {gpu(0, 8192), gpu(1, 8192)};
  devs[0].uuid = "GPU-aaaa";
  devs[1].uuid = "GPU-bbbb";
  const auto pp = place({placement_kev(), placement_laya()}, devs, opts());
  CHECK(spawn_placement(pp.placement.at("kev"), devs).visible == "GPU-aaaa");
  CHECK(spawn_placement(pp.placement.at("laya"), devs).visible == "GPU-bbbb");
}

TEST_CASE("placement: residency rotate keeps one child per device, devices still run side by side") {
  const auto pp = place({placement_kev(), placement_laya(), judge()}, {gpu(0, 24576), gpu(1, 24576)}, opts(config::Residency::rotate));
  for (const auto& d : pp.devices) {
    for (const auto& s : d.allowed_sets) CHECK(s.size() == 1);
  }
  for (const auto& s : pp.plan.allowed_sets) CHECK(s.size() == 2);
}

TEST_CASE("placement: split_bytes puts layers where llama.cpp's load_tensors does") {
  ProfileInput p;
  p.name = "s";
  p.model = test::stories260k_info();  // 5 layers + output: 6 offloaded "layers"
  const Bill b = estimate(p.model, false, p.flags, {}, kPlacementOverhead);
  // Even split: points 0.5, 1.0; layers at 0/6, 1/6, 2/6 -> device 0; 3/6 (not < 0.5), 4/6, output -> device 1.
  const auto bytes = split_bytes(p, b, {1.0, 1.0});
  const std::uint64_t layer = p.model.layer_bytes[0];
  const std::uint64_t w0 = 3 * layer, w1 = 2 * layer + p.model.output_bytes;
  const auto kv = [&](double f) { return static_cast<std::uint64_t>(std::llround(static_cast<double>(b.kv_gpu) * f)); };
  const auto w = [&](std::uint64_t x) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(b.weights_gpu) * static_cast<double>(x) /
                                                   static_cast<double>(w0 + w1)));
  };
  CHECK(bytes[0] == w(w0) + kv(0.6) + b.compute_gpu + b.overhead_gpu);
  CHECK(bytes[1] == w(w1) + kv(0.4) + b.compute_gpu + b.overhead_gpu);
}

TEST_CASE("placement: no devices known -> the single-budget plan, nothing placed") {
  PlanOptions o = opts();
  o.budget = 5888 * kMiB;
  const auto pp = place({placement_kev(), placement_laya()}, {}, o);
  CHECK(pp.placement.empty());
  CHECK(pp.plan.allowed_sets == Sets{{"kev"}, {"laya"}});
}
