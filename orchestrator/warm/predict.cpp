#include "warm/predict.hpp"

#include <algorithm>

namespace kevlaya::warm {

namespace {

void add_unique(std::vector<std::string>& out, const std::string& name, const std::string& current) {
  if (!name.empty() && name != current && std::find(out.begin(), out.end(), name) == out.end())
    out.push_back(name);
}

}  // namespace

std::vector<std::string> likely_next(const config::Config& cfg, const std::string& current,
                                     const std::string& previous) {
  std::vector<std::string> out;
  for (const auto& pl : cfg.pipelines) {
    std::vector<std::string> stages;
    for (const auto& st : pl.stages) {
      const auto* p = cfg.find_profile(st.model);
      stages.push_back(p ? p->name : std::string());
    }
    auto at = std::find(stages.begin(), stages.end(), current);
    if (at == stages.end()) continue;
    const auto n = stages.size();
    const auto i = static_cast<std::size_t>(at - stages.begin());
    for (std::size_t k = 1; k <= n; ++k) add_unique(out, stages[(i + k) % n], current);
  }
  if (cfg.find_profile(previous)) add_unique(out, previous, current);
  return out;
}

std::vector<std::filesystem::path> profile_files(const config::Profile& p) {
  std::vector<std::filesystem::path> files;
  if (!p.model.empty()) files.push_back(p.model);
  for (const auto& l : p.lora) files.push_back(l.path);
  return files;
}

}  // namespace kevlaya::warm
