// Fitting a discovered model's flags to a budget (see fit.hpp).
#include "ledger/fit.hpp"

#include <algorithm>

#include "ledger/plan.hpp"

namespace kevlaya::ledger {
namespace {

constexpr int kStep = 256;          // llama_context pads n_ctx to 256
constexpr int kFloorCtx = 4096;     // fewer layers before a context smaller than this
constexpr int kMaxCtx = 1 << 20;    // the profile key's upper bound
constexpr int kDefaultTrained = 4096;  // a model that does not say its trained context

}  // namespace

std::string to_string(const FitChoice& c) {
  return "ngl " + (c.ngl < 0 ? std::string("all") : std::to_string(c.ngl)) + ", ctx " + std::to_string(c.ctx) +
         ", parallel " + std::to_string(c.parallel);
}

FitChoice fit_model(const ProfileInput& in, std::uint64_t budget, std::uint64_t overhead, std::uint64_t extra, bool gpu) {
  // The planner's headroom stays free: a fitted model must not start with a thin-headroom warning.
  const auto usable = static_cast<std::uint64_t>(static_cast<double>(budget) * (1.0 - kHeadroomWarn));
  const std::uint64_t room = usable > extra ? usable - extra : 0;
  const auto cost = [&](int ngl, int ctx, int parallel) {
    ProfileInput p = in;
    p.flags.ngl = ngl;
    p.flags.ctx = ctx;
    p.flags.parallel = parallel;
    return gpu ? estimate(p.model, p.output_tied, p.flags, p.adapters, overhead).total_gpu() : host_bytes(p);
  };
  const int trained = std::min(in.model.n_ctx_train ? static_cast<int>(in.model.n_ctx_train) : kDefaultTrained, kMaxCtx);
  const int floor = std::max(kStep, std::min(trained, kFloorCtx) / kStep * kStep);
  const std::string where = gpu ? "GPU budget" : "host RAM";
  const std::string t = std::to_string(trained);
  for (const int par : {4, 2}) {
    if (static_cast<std::int64_t>(trained) * par <= kMaxCtx && cost(-1, trained * par, par) <= room)
      return {-1, trained * par, par, true,
              "all layers, " + std::to_string(par) + " slots with the trained context " + t + " each fit the " + where};
  }
  for (int c = trained; c >= floor; c = (c - 1) / kStep * kStep) {
    if (cost(-1, c, 1) > room) continue;
    return {-1, c, 1, true,
            c == trained ? "all layers and the trained context " + t + " fit the " + where + " (one slot)"
                         : "all layers; ctx " + std::to_string(c) + " is the largest that fits the " + where +
                               " (trained " + t + ")"};
  }
  if (gpu) {
    const int all = static_cast<int>(in.model.n_layer) + 1;
    for (int n = all - 1; n >= 0; --n) {
      if (cost(n, floor, 1) > room) continue;
      return {n, floor, 1, true,
              "all " + std::to_string(all) + " layers do not fit at ctx " + std::to_string(floor) + "; " +
                  std::to_string(n) + " layers on the GPU do"};
    }
  }
  return {-1, floor, 1, false, "does not fit the " + where + " even at ctx " + std::to_string(floor) +
                                   (gpu ? " with no layer on the GPU" : "")};
}

}  // namespace kevlaya::ledger
