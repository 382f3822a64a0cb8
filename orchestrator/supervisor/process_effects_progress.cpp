// ProcessEffects::progress: a starting child's load stage, read from its log file since its spawn
// (on demand, for /status; bounded to the last kTailBytes).
#include <fstream>

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
  const auto file = child_log_path(orch_.log_dir, profile);
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) return LoadProgress{"starting", std::nullopt, std::nullopt};
  std::uintmax_t from = run->log_offset;
  if (from > size) from = 0;  // rotated at the spawn
  if (size - from > kTailBytes) from = size - kTailBytes;
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse_load_progress(text);
}

}  // namespace kevlaya::supervisor
