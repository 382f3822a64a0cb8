// ProcessEffects::progress: a starting child's load stage, read from its log file since its spawn
// (on demand, for /status; bounded to the last kTailBytes).
#include "common/bounded_file.hpp"
#include "supervisor/load_progress.hpp"
#include "supervisor/process_effects.hpp"

namespace kevlaya::supervisor {

namespace {

constexpr std::uintmax_t kTailBytes = 256 * 1024;

}  // namespace

std::uintmax_t ProcessEffects::log_size(const std::string& profile) const {
  std::error_code ec;
  const auto size = std::filesystem::file_size(child_log_path(orch_.log_dir, profile), ec);
  return ec ? 0 : size;
}

std::optional<LoadProgress> ProcessEffects::progress(const std::string& profile) {
  const auto* run = running(profile);
  if (orch_.log_dir.empty() || !run || run->ready) return std::nullopt;
  // No log yet reads as empty: "starting".
  return parse_load_progress(read_file_tail(child_log_path(orch_.log_dir, profile), run->log_offset, kTailBytes));
}

}  // namespace kevlaya::supervisor
