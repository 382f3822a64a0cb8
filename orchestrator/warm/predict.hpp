// Which profile is likely to be wanted next, so its files can be prefetched while another serves.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::warm {

// Profiles likely wanted after `current` (profile names, best first, without `current`): the stages
// that follow `current` in each pipeline using it (wrapping around: verify is followed by the next
// round's decide), then `previous` (two models rotating). Pure.
std::vector<std::string> likely_next(const config::Config& cfg, const std::string& current,
                                     const std::string& previous);

// The files a child of `p` reads at start: the model and its LoRA adapters.
std::vector<std::filesystem::path> profile_files(const config::Profile& p);

}  // namespace kevlaya::warm
