// Choosing ngl, ctx and parallel for a model nobody wrote flags for (models_dir): the largest
// context up to the trained one, all layers while they fit, then fewer. Pure.
#pragma once
#include <cstdint>
#include <string>

#include "ledger/ledger.hpp"

namespace kevlaya::ledger {

struct FitChoice {
  int ngl = -1;  // -1 = all
  int ctx = 0;
  int parallel = 1;
  bool fits = true;  // false: nothing fits; the values are the smallest tried (the plan refuses it)
  std::string why;   // one sentence for `plan`
};

// "ngl all, ctx 8192, parallel 4": how plan, check, init and the startup log show a choice.
std::string to_string(const FitChoice& c);

// Fits `in` (its model and adapters; its flags' other settings kept) alone into `budget` bytes:
// GPU memory when `gpu`, else host RAM (host_bytes: no layer offloaded, ngl left at all).
// kHeadroomWarn of the budget is left free, then `extra` bytes (e.g. a multimodal projector the
// ledger does not price).
// Order: every slot the trained context with 4 then 2 slots (all layers); one slot with the largest
// context from the trained one down to min(trained, 4096); then the most layers at that floor.
FitChoice fit_model(const ProfileInput& in, std::uint64_t budget, std::uint64_t overhead, std::uint64_t extra, bool gpu);

}  // namespace kevlaya::ledger
