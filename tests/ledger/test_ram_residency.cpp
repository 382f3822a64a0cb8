// No GPU budget: host RAM decides the residency (ledger::host_bytes, ledger::ram_residency).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "fixtures.hpp"
#include "ledger/placement.hpp"
#include "ledger/plan.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;
using R = config::Residency;

TEST_CASE("ram: a profile's host bytes are its whole bill, whatever its ngl") {
  ProfileInput p = test::reference_kev();
  const std::uint64_t at_32 = host_bytes(p);
  p.flags.ngl = 0;
  CHECK(host_bytes(p) == at_32);  // without a GPU, llama-server keeps every layer in RAM
  CHECK(at_32 >= p.model.tensor_bytes);  // weights in full, plus KV and compute
  p.flags.ctx *= 4;
  CHECK(host_bytes(p) > at_32);  // a longer context costs KV
}

TEST_CASE("ram: auto is co-resident when everything fits in RAM, else rotate") {
  const std::uint64_t need = 3000 * kMiB;
  auto fits = ram_residency(R::auto_, need, 4000 * kMiB);
  CHECK(fits.residency == R::co_resident);
  CHECK(fits.why.find("3000.00 MiB of host RAM together, budget 4000.00 MiB") != std::string::npos);
  CHECK_FALSE(fits.warning);
  CHECK(fits.fits);
  auto tight = ram_residency(R::auto_, need, 2999 * kMiB);
  CHECK(tight.residency == R::rotate);
  CHECK_FALSE(tight.warning);
  CHECK_FALSE(tight.fits);  // a pin is refused then (no GPU budget to check it against)
}

TEST_CASE("ram: rotate stays rotate, co-resident stays co-resident with a warning when it does not fit") {
  CHECK(ram_residency(R::rotate, 1, 4000 * kMiB).residency == R::rotate);
  auto forced = ram_residency(R::co_resident, 5000 * kMiB, 4000 * kMiB);
  CHECK(forced.residency == R::co_resident);
  REQUIRE(forced.warning);
  CHECK(forced.warning->find("5000.00 MiB") != std::string::npos);
}

TEST_CASE("ram: with host RAM unknown, auto rotates as before and co-resident is kept") {
  CHECK(ram_residency(R::auto_, 1, std::nullopt).residency == R::rotate);
  CHECK(ram_residency(R::co_resident, 1, std::nullopt).residency == R::co_resident);
}

// With a GPU budget, CPU-side parts of the bills (here: two ngl 0 profiles, which cost the GPU
// almost nothing) still add up in host RAM for children alive together (ledger::fit_host_ram).
namespace {

Plan gpu_plan(bool pin_kev = false, int ngl = 0, R residency = R::auto_) {
  auto kev = test::reference_kev(), laya = test::reference_laya();
  kev.flags.ngl = ngl;
  laya.flags.ngl = ngl;
  kev.pin = pin_kev;
  PlanOptions opt;
  opt.budget = 24576 * kMiB;
  opt.residency = residency;
  return make_plan({kev, laya}, opt);
}

std::vector<ProfileInput> inputs(bool pin_kev = false) {
  auto kev = test::reference_kev();
  kev.pin = pin_kev;
  return {kev, test::reference_laya()};
}

bool has_diag(const Plan& p, config::Severity s, const std::string& text) {
  return std::any_of(p.diagnostics.begin(), p.diagnostics.end(), [&](const PlanDiagnostic& d) {
    return d.severity == s && d.message.find(text) != std::string::npos;
  });
}

using Sets = std::vector<std::vector<std::string>>;

}  // namespace

TEST_CASE("ram with a GPU: CPU-only children that fit the GPU but not host RAM together rotate") {
  Plan plan = gpu_plan();
  REQUIRE(plan.mode == Mode::co_resident);  // the GPU ledger alone keeps both
  fit_host_ram(plan, inputs(), 4096 * kMiB, R::auto_);
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev"}, {"laya"}});
  CHECK(has_diag(plan, config::Severity::warning, "MiB of host RAM (layers not offloaded, CPU KV cache and buffers), budget 4096.00 MiB: they rotate instead"));
  CHECK(plan.ok());
}

TEST_CASE("ram with a GPU: children that fit host RAM together, or offload every layer, stay co-resident") {
  Plan roomy = gpu_plan();
  fit_host_ram(roomy, inputs(), 16384 * kMiB, R::auto_);
  CHECK(roomy.mode == Mode::co_resident);
  CHECK(roomy.allowed_sets == Sets{{"kev", "laya"}});
  CHECK(roomy.diagnostics.empty());
  Plan offloaded = gpu_plan(false, 99);  // weights on the GPU: little stays in RAM
  REQUIRE(offloaded.mode == Mode::co_resident);
  fit_host_ram(offloaded, inputs(), 1024 * kMiB, R::auto_);
  CHECK(offloaded.allowed_sets == Sets{{"kev", "laya"}});
  Plan unknown = gpu_plan();
  fit_host_ram(unknown, inputs(), std::nullopt, R::auto_);  // host RAM unknown: nothing checked
  CHECK(unknown.allowed_sets == Sets{{"kev", "laya"}});
}

TEST_CASE("ram with a GPU: co-resident asked for is kept with a warning, a pin that cannot stay is refused") {
  Plan forced = gpu_plan(false, 0, R::co_resident);
  fit_host_ram(forced, inputs(), 4096 * kMiB, R::co_resident);
  CHECK(forced.allowed_sets == Sets{{"kev", "laya"}});
  CHECK(has_diag(forced, config::Severity::warning, "residency: co-resident, but alive together they need"));
  Plan pinned = gpu_plan(true);
  fit_host_ram(pinned, inputs(true), 4096 * kMiB, R::auto_);
  CHECK_FALSE(pinned.ok());
  CHECK(std::any_of(pinned.diagnostics.begin(), pinned.diagnostics.end(), [](const PlanDiagnostic& d) {
    return d.pin && d.message.find("pinned") != std::string::npos;  // kev alone, or laya beside it
  }));
}

namespace {

// kev pinned beside laya and x (laya's twin): three children, all at ngl `ngl`.
std::vector<ProfileInput> pinned_trio(int ngl) {
  auto kev = test::reference_kev(), laya = test::reference_laya(), x = test::reference_laya();
  x.name = "x";
  kev.pin = true;
  for (auto* p : {&kev, &laya, &x}) {
    p->flags.ngl = ngl;
    p->shared_base = false;  // laya and x: two children of one model, not a shared base
  }
  return {kev, laya, x};
}

bool has_pin_error(const Plan& p, const std::string& subject, const std::string& text) {
  return std::any_of(p.diagnostics.begin(), p.diagnostics.end(), [&](const PlanDiagnostic& d) {
    return d.pin && d.severity == config::Severity::error && d.subject == subject && d.message.find(text) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("ram with a GPU: a pin whose partners do not fit host RAM together keeps each one beside it in turn") {
  const auto in = pinned_trio(0);
  PlanOptions opt;
  opt.budget = 24576 * kMiB;
  const Plan base = make_plan(in, opt);
  REQUIRE(base.allowed_sets == Sets{{"kev", "laya", "x"}});  // the GPU alone keeps all three
  const auto host = child_host_bytes(base, true);
  Plan plan = base;  // room for kev and one partner, not two
  fit_host_ram(plan, in, host.at("kev") + host.at("laya") + kMiB, R::auto_);
  CHECK(plan.ok());
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}, {"kev", "x"}});
  CHECK(has_diag(plan, config::Severity::warning, "the others rotate beside the pins"));
  Plan tight = base;  // no partner fits beside kev: neither could ever start
  fit_host_ram(tight, in, host.at("kev") + host.at("laya") - kMiB, R::auto_);
  CHECK_FALSE(tight.ok());
  CHECK(has_pin_error(tight, "laya", "does not fit beside the pinned kev"));
  CHECK(has_pin_error(tight, "x", "does not fit beside the pinned kev"));
  Plan none = base;  // not even the pin alone
  fit_host_ram(none, in, host.at("kev") - kMiB, R::auto_);
  CHECK(has_pin_error(none, "kev", "pinned, but alone they need"));
}

TEST_CASE("ram without a GPU: a pin stays resident and the others rotate beside it, priced by host RAM") {
  const auto in = pinned_trio(32);  // without a GPU, ngl changes nothing: every byte is in RAM
  PlanOptions opt;
  opt.budget = std::numeric_limits<std::uint64_t>::max();
  opt.residency = R::co_resident;
  const Plan base = make_plan(in, opt);
  Plan plan = base;
  fit_sets_to_host_ram(plan, in, host_bytes(in[0]) + host_bytes(in[1]) + kMiB, true);
  CHECK(plan.ok());
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}, {"kev", "x"}});
  Plan unpriced = base;  // host RAM unknown: the shape is kept, nothing is priced
  fit_sets_to_host_ram(unpriced, in, std::nullopt, true);
  CHECK(unpriced.ok());
  CHECK(unpriced.allowed_sets == Sets{{"kev", "laya"}, {"kev", "x"}});
  Plan tight = base;
  fit_sets_to_host_ram(tight, in, host_bytes(in[0]) + host_bytes(in[1]) - kMiB, true);
  CHECK(has_pin_error(tight, "laya", "does not fit beside the pinned kev"));
  CHECK_FALSE(tight.ok());
}

TEST_CASE("ram with a GPU: a device whose children are split by host RAM rotates in its own plan too") {
  auto kev = test::reference_kev(), laya = test::reference_laya();
  kev.flags.ngl = 0;
  laya.flags.ngl = 0;
  PlanOptions opt;
  const std::vector<Device> gpus = {Device{0, "gpu", "", 24576 * kMiB, 24576 * kMiB}};
  auto pp = place({kev, laya}, gpus, opt);
  REQUIRE(pp.devices.size() == 1);
  REQUIRE_FALSE(pp.devices[0].rotates());
  fit_host_ram(pp, {kev, laya}, 4096 * kMiB, R::auto_);
  CHECK(pp.plan.allowed_sets == Sets{{"kev"}, {"laya"}});
  CHECK(pp.devices[0].rotates());
  CHECK(pp.devices[0].allowed_sets == Sets{{"kev"}, {"laya"}});
}

TEST_CASE("ram without a GPU: when not every profile fits, the largest groups that fit take turns") {
  auto in = pinned_trio(0);
  in[0].pin = false;
  PlanOptions opt;
  opt.budget = std::numeric_limits<std::uint64_t>::max();
  opt.residency = R::co_resident;
  const Plan base = make_plan(in, opt);
  const std::uint64_t kev = host_bytes(in[0]), laya = host_bytes(in[1]);
  REQUIRE(kev > laya);  // kev is the 7B, laya and x the 3B
  Plan pairs = base;  // any two fit, not three
  fit_sets_to_host_ram(pairs, in, kev + laya + kMiB, true);
  CHECK(pairs.ok());
  CHECK(pairs.mode == Mode::rotate);
  CHECK(pairs.allowed_sets == Sets{{"kev", "laya"}, {"kev", "x"}, {"laya", "x"}});
  Plan small = base;  // laya and x together, kev only alone
  fit_sets_to_host_ram(small, in, 2 * laya + kMiB, true);
  CHECK(small.allowed_sets == Sets{{"kev"}, {"laya", "x"}});
  Plan one = base;  // nothing fits beside anything; a child over the budget still runs alone (mmap)
  fit_sets_to_host_ram(one, in, laya - kMiB, true);
  CHECK(one.ok());
  CHECK(one.allowed_sets == Sets{{"kev"}, {"laya"}, {"x"}});
  Plan rotate = base;  // not `largest` (residency: rotate): one at a time
  fit_sets_to_host_ram(rotate, in, kev + laya + kMiB, false);
  CHECK(rotate.allowed_sets == Sets{{"kev"}, {"laya"}, {"x"}});
}

TEST_CASE("ram with a GPU: CPU children over host RAM together keep the largest groups that fit") {
  auto in = pinned_trio(0);
  in[0].pin = false;
  PlanOptions opt;
  opt.budget = 24576 * kMiB;
  Plan plan = make_plan(in, opt);
  REQUIRE(plan.allowed_sets == Sets{{"kev", "laya", "x"}});
  const auto host = child_host_bytes(plan, true);
  fit_host_ram(plan, in, host.at("kev") + host.at("laya") + kMiB, R::auto_);
  CHECK(plan.ok());
  CHECK(plan.mode == Mode::rotate);
  CHECK(plan.allowed_sets == Sets{{"kev", "laya"}, {"kev", "x"}, {"laya", "x"}});
}
