// No GPU budget: host RAM decides the residency (ledger::host_bytes, ledger::ram_residency).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
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
