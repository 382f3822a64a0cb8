// No GPU budget: host RAM decides the residency (ledger::host_bytes, ledger::ram_residency).
#include <catch2/catch.hpp>

#include <algorithm>

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
    return d.pin && d.message.find("pinned, but alive together") != std::string::npos;
  }));
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
