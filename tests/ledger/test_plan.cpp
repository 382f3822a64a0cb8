// Residency planning: modes, overrides, shared-base groups, refusals and headroom warnings.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "ledger/plan.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;
using kevlaya::test::q4ks_3b_info;
using kevlaya::test::q4ks_7b_info;

namespace {
constexpr std::uint64_t kPlanOverhead = 450 * kMiB;
using Sets = std::vector<std::vector<std::string>>;

ProfileInput plan_kev() {
  ProfileInput p = test::reference_kev();
  p.share_key = "ngl=32 c=2048";
  return p;
}

ProfileInput plan_laya() { return test::reference_laya(); }

std::uint64_t plan_alone(const ProfileInput& p) {
  return estimate(p.model, p.output_tied, p.flags, p.adapters, kPlanOverhead).total_gpu();
}

PlanOptions budget(std::uint64_t bytes, config::Residency r = config::Residency::auto_) {
  return PlanOptions{bytes, kPlanOverhead, r};
}

bool has(const Plan& p, config::Severity s, const std::string& needle) {
  for (const auto& d : p.diagnostics) {
    if (d.severity == s && d.message.find(needle) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("plan: both fit together -> co-resident, one allowed set with both") {
  const auto plan = make_plan({plan_kev(), plan_laya()}, budget(24 * 1024 * kMiB));
  CHECK(plan.mode == Mode::co_resident);
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}});
  CHECK(plan.ok());
  REQUIRE(plan.sets.size() == 1);
  CHECK(plan.sets[0].total_gpu == plan_alone(plan_kev()) + plan_alone(plan_laya()));
  CHECK(plan.sets[0].fits);
}

TEST_CASE("plan: each fits alone but not together -> rotate, one at a time") {
  const std::uint64_t b = std::max(plan_alone(plan_kev()), plan_alone(plan_laya())) + 1024 * kMiB;
  REQUIRE(b < plan_alone(plan_kev()) + plan_alone(plan_laya()));
  const auto plan = make_plan({plan_kev(), plan_laya()}, budget(b));
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev"}, {"laya"}});
  CHECK(plan.ok());
  REQUIRE(plan.sets.size() == 1);
  CHECK_FALSE(plan.sets[0].fits);
}

TEST_CASE("plan: residency rotate overrides a co-resident fit") {
  const auto plan = make_plan({plan_kev(), plan_laya()}, budget(24 * 1024 * kMiB, config::Residency::rotate));
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev"}, {"laya"}});
}

TEST_CASE("plan: residency co-resident that does not fit is an error") {
  const std::uint64_t b = std::max(plan_alone(plan_kev()), plan_alone(plan_laya())) + 1024 * kMiB;
  const auto plan = make_plan({plan_kev(), plan_laya()}, budget(b, config::Residency::co_resident));
  CHECK(plan.mode == Mode::co_resident);
  CHECK_FALSE(plan.ok());
  CHECK(has(plan, config::Severity::error, "co-resident"));
}

TEST_CASE("plan: three children, the pair that fits is kept together in rotate mode") {
  auto small = plan_laya();
  small.name = "tiny";
  small.model.path = "/models/other-3b.gguf";
  const std::uint64_t b = plan_alone(plan_laya()) + plan_alone(small) + 64 * kMiB;
  REQUIRE(b < plan_alone(plan_kev()) + plan_alone(plan_laya()));
  REQUIRE(b >= plan_alone(plan_kev()));
  const auto plan = make_plan({plan_kev(), plan_laya(), small}, budget(b));
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"laya", "tiny"}, {"kev"}});
  CHECK(plan.sets.size() == 4);  // three pairs and the triple
}

TEST_CASE("plan: same base, different adapters -> one shared-base child with per-profile scales") {
  auto a = plan_kev();
  auto b = plan_kev();
  b.name = "laya";
  a.adapters = {{"kev-lora", "/l/kev.gguf", 20 * kMiB, 1.0}};
  b.adapters = {{"laya-lora", "/l/laya.gguf", 30 * kMiB, 0.5}};
  const auto plan = make_plan({a, b}, budget(6 * 1024 * kMiB));
  CHECK(plan.mode == Mode::shared_base);
  REQUIRE(plan.shared_children().size() == 1);
  const auto& g = plan.children[0];
  CHECK(g.members == std::vector<std::string>{"kev", "laya"});
  REQUIRE(g.adapters.size() == 2);
  CHECK(g.adapters[0].path == "/l/kev.gguf");
  REQUIRE(g.scales.at("kev").size() == 2);
  CHECK(g.scales.at("kev")[0].id == 0);
  CHECK(g.scales.at("kev")[0].scale == 1.0);
  CHECK(g.scales.at("kev")[1].scale == 0.0);
  CHECK(g.scales.at("laya")[0].scale == 0.0);
  CHECK(g.scales.at("laya")[1].id == 1);
  CHECK(g.scales.at("laya")[1].scale == 0.5);
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}});
  CHECK(plan.child_spec("laya") == &plan.children[0]);
  CHECK(g.name == "kev+laya");
  CHECK(plan.sets.empty());  // one child: nothing to combine
}

TEST_CASE("plan: shared-base grouping applies under residency rotate too") {
  auto a = plan_kev();
  auto b = plan_kev();
  b.name = "laya";
  a.adapters = {{"kev-lora", "/l/kev.gguf", 20 * kMiB, 1.0}};
  b.adapters = {{"laya-lora", "/l/laya.gguf", 30 * kMiB, 0.5}};
  auto other = plan_laya();
  other.name = "judge";
  const auto plan = make_plan({a, b, other}, budget(24 * 1024 * kMiB, config::Residency::rotate));
  CHECK(plan.mode == Mode::rotate);
  REQUIRE(plan.shared_children().size() == 1);
  CHECK(plan.shared_children()[0].members == std::vector<std::string>{"kev", "laya"});
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}, {"judge"}});
  const auto alone_group = make_plan({a, b}, budget(24 * 1024 * kMiB, config::Residency::rotate));
  CHECK(alone_group.mode == Mode::shared_base);
}

TEST_CASE("plan: shared_base false opts a profile out of the group") {
  auto a = plan_kev();
  auto b = plan_kev();
  b.name = "laya";
  b.shared_base = false;
  const auto plan = make_plan({a, b}, budget(24 * 1024 * kMiB));
  CHECK(plan.shared_children().empty());
  CHECK(plan.mode == Mode::co_resident);
  REQUIRE(plan.child_spec("kev") != nullptr);
  CHECK(plan.child_spec("kev")->members == std::vector<std::string>{"kev"});  // a child of its own
  CHECK(plan.child_of("kev") == "kev");
}

TEST_CASE("plan: different flags on the same model do not share a child") {
  auto a = plan_kev();
  auto b = plan_kev();
  b.name = "laya";
  b.flags.ctx = 4096;
  b.share_key = "ngl=32 c=4096";
  CHECK_FALSE(can_share(a, b));
  CHECK(make_plan({a, b}, budget(24 * 1024 * kMiB)).shared_children().empty());
}

TEST_CASE("plan: a profile too big even alone is refused with the ngl that would fit") {
  auto big = plan_kev();
  big.flags.ctx = 8192;
  const std::uint64_t b = 3 * 1024 * kMiB;
  const auto plan = make_plan({big, plan_laya()}, budget(b));
  CHECK_FALSE(plan.ok());
  const auto& pb = plan.profiles[0];
  CHECK_FALSE(pb.fits_alone);
  CHECK(pb.too_big.find("weights") == 0);
  REQUIRE(pb.suggest_ngl);
  auto f = big.flags;
  f.ngl = *pb.suggest_ngl;
  CHECK(estimate(big.model, false, f, {}, kPlanOverhead).total_gpu() <= b);
  f.ngl = *pb.suggest_ngl + 1;
  CHECK(estimate(big.model, false, f, {}, kPlanOverhead).total_gpu() > b);
  CHECK(has(plan, config::Severity::error, "ngl " + std::to_string(*pb.suggest_ngl)));
  // the refused profile is in no allowed set; the other one still runs
  CHECK(plan.allowed_sets == Sets{{"laya"}});
}

TEST_CASE("plan: a context too long is refused with the ctx that would fit") {
  auto big = plan_kev();
  big.flags.ngl = -1;
  big.flags.ctx = 32768;  // 4 GiB of KV on top of ~4 GiB of weights
  const std::uint64_t b = 6 * 1024 * kMiB;
  const auto plan = make_plan({big}, budget(b));
  const auto& pb = plan.profiles[0];
  REQUIRE_FALSE(pb.fits_alone);
  CHECK(pb.too_big.find("KV cache") == 0);
  REQUIRE(pb.suggest_ctx);
  CHECK(*pb.suggest_ctx % 256 == 0);
  auto f = big.flags;
  f.ctx = *pb.suggest_ctx;
  CHECK(estimate(big.model, false, f, {}, kPlanOverhead).total_gpu() <= b);
  f.ctx = *pb.suggest_ctx + 256;
  CHECK(estimate(big.model, false, f, {}, kPlanOverhead).total_gpu() > b);
  CHECK(has(plan, config::Severity::error, "ctx " + std::to_string(*pb.suggest_ctx)));
}

TEST_CASE("plan: under 10% headroom warns, comfortable headroom does not") {
  const std::uint64_t need = plan_alone(plan_kev());
  const auto tight = make_plan({plan_kev()}, budget(need + need / 20));
  CHECK(tight.ok());
  CHECK(has(tight, config::Severity::warning, "headroom"));
  const auto roomy = make_plan({plan_kev()}, budget(need * 2));
  CHECK_FALSE(has(roomy, config::Severity::warning, "headroom"));
}

TEST_CASE("plan: a measurement decides over the estimate") {
  auto p = plan_kev();
  const std::uint64_t need = plan_alone(p);
  const auto est = make_plan({p}, budget(need));
  CHECK(est.ok());
  Measured m;
  m.compute_gpu = est.profiles[0].estimate.compute_gpu + 512 * kMiB;  // reality was bigger
  p.measured = m;
  const auto measured = make_plan({p}, budget(need));
  CHECK_FALSE(measured.ok());
  CHECK(measured.profiles[0].effective.compute_gpu == *m.compute_gpu);
  CHECK(measured.profiles[0].estimate.compute_gpu == est.profiles[0].estimate.compute_gpu);
}

TEST_CASE("plan: nothing fits -> rotate with no allowed set") {
  const auto plan = make_plan({plan_kev(), plan_laya()}, budget(kPlanOverhead));
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets.empty());
  CHECK_FALSE(plan.ok());
}
