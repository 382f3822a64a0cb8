#include "runtime/discovered.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "ledger/inputs.hpp"
#include "ledger/plan.hpp"
#include "runtime/plan_setup.hpp"

namespace kevlaya::runtime {
namespace {

// Bytes of the --mmproj files in `args`: the ledger does not price projectors, so the fit keeps room.
std::uint64_t projector_bytes(const std::vector<std::string>& args) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    struct stat st {};
    if (args[i] == "--mmproj" && ::stat(args[i + 1].c_str(), &st) == 0) n += static_cast<std::uint64_t>(st.st_size);
  }
  return n;
}

}  // namespace

Result<std::vector<DiscoveredFit>> fit_discovered(config::Config& cfg, const std::vector<ledger::Device>& devices) {
  std::vector<DiscoveredFit> out;
  config::Config only;  // the discovered profiles alone: gather reads just their files
  only.orch = cfg.orch;
  for (const auto& p : cfg.profiles)
    if (p.discovered) only.profiles.push_back(p);
  if (only.profiles.empty()) return out;
  auto gathered = ledger::gather(only);
  if (!gathered) return gathered.error();
  const bool gpu = !devices.empty();
  std::optional<std::uint64_t> budget = host_ram_budget();
  if (gpu) {
    budget = 0;
    for (const auto& d : devices) budget = std::max(*budget, d.budget);
  }
  const auto overhead = ledger::plan_options(cfg.orch, 0).overhead;
  // One choice per model file, priced with the most adapter bytes any of its profiles loads.
  std::map<std::string, const ledger::ProfileInput*> widest;
  for (std::size_t i = 0; i < only.profiles.size(); ++i) {
    const auto& in = gathered->profiles[i];
    auto& w = widest[only.profiles[i].model.string()];
    const auto bytes = [](const ledger::ProfileInput* p) {
      std::uint64_t n = 0;
      for (const auto& a : p->adapters) n += a.bytes;
      return n;
    };
    if (!w || bytes(&in) > bytes(w)) w = &in;
  }
  std::map<std::string, const config::Profile*> first_of;  // model file -> its first profile: one lookup each
  for (const auto& p : only.profiles) first_of.emplace(p.model.string(), &p);
  std::map<std::string, ledger::FitChoice> chosen;
  for (const auto& kv : widest) {
    const std::string& model = kv.first;
    const ledger::ProfileInput* in = kv.second;
    const auto& prof = *first_of.at(model);
    if (budget) {
      chosen[model] = ledger::fit_model(*in, *budget, gpu ? overhead : 0, projector_bytes(prof.extra_args), gpu);
    } else {
      const int trained = in->model.n_ctx_train ? static_cast<int>(in->model.n_ctx_train) : 4096;
      chosen[model] = {-1, std::min(trained, 4096), 1, true, "no GPU and host RAM unknown: min(trained context, 4096)"};
    }
  }
  for (auto& p : cfg.profiles) {
    if (!p.discovered) continue;
    const auto& c = chosen.at(p.model.string());
    p.ngl = c.ngl;
    p.ctx = c.ctx;
    p.parallel = c.parallel;
    out.push_back({p.name, config::display_path(p.model), c});
  }
  return out;
}

}  // namespace kevlaya::runtime
