// Host RAM: a profile's bytes without a GPU, and the residency a GPU-less machine can hold.
#include "ledger/plan.hpp"

namespace kevlaya::ledger {

std::uint64_t host_bytes(const ProfileInput& p) {
  Flags f = p.flags;
  f.ngl = 0;
  const Bill b = estimate(p.model, p.output_tied, f, p.adapters, 0);
  return b.weights_gpu + b.weights_cpu + b.kv_gpu + b.kv_cpu + b.compute_gpu + b.compute_cpu + b.adapters_gpu;
}

RamResidency ram_residency(config::Residency wanted, std::uint64_t need, std::optional<std::uint64_t> budget) {
  RamResidency r;
  const std::string base = "no GPU budget (gpu.vram_mib is auto and no NVIDIA GPU answered)";
  if (wanted == config::Residency::rotate) {
    r.why = base + "; residency: rotate";
    return r;
  }
  if (!budget) {
    r.residency = wanted == config::Residency::co_resident ? wanted : config::Residency::rotate;
    r.why = base + "; host RAM unknown";
    return r;
  }
  const bool fits = need <= *budget;
  r.fits = fits;
  const std::string sums = "the profiles need " + format_mib(need) + " MiB of host RAM together, budget " +
                           format_mib(*budget) + " MiB (MemAvailable or the cgroup limit's headroom at startup, less " +
                           std::to_string(kRamReserveMiB) + " MiB)";
  r.residency = fits || wanted == config::Residency::co_resident ? config::Residency::co_resident
                                                                 : config::Residency::rotate;
  r.why = base + "; " + sums;
  if (!fits && wanted == config::Residency::co_resident)
    r.warning = "residency: co-resident, but " + sums + "; the system may swap";
  return r;
}

std::uint64_t host_part(const Bill& b) { return b.weights_cpu + b.kv_cpu + b.compute_cpu; }

}  // namespace kevlaya::ledger
