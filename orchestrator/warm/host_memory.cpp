#include "warm/host_memory.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kevlaya::warm {

namespace fs = std::filesystem;

namespace {

// v1 reports "no limit" as LONG_MAX rounded down to a page; anything past 2^60 is no limit.
constexpr std::uint64_t kNoLimit = 1ULL << 60;

std::optional<std::uint64_t> number(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The value of `key` in a memory.stat text ("key value" per line).
std::optional<std::uint64_t> stat_value(std::string_view stat, std::string_view key) {
  while (!stat.empty()) {
    const auto eol = stat.find('\n');
    const auto line = stat.substr(0, eol);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
      return number(line.substr(key.size() + 1));
    if (eol == std::string_view::npos) break;
    stat.remove_prefix(eol + 1);
  }
  return std::nullopt;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void take_min(std::optional<std::uint64_t>& best, std::optional<std::uint64_t> v) {
  if (v) best = best ? std::min(*best, *v) : *v;
}

// `dir` and each ancestor up to `top`; for v2, where a parent's memory.max binds as well.
std::optional<std::uint64_t> walk_v2(fs::path dir, const fs::path& top) {
  std::optional<std::uint64_t> best;
  for (;;) {
    if (fs::exists(dir / "memory.max")) {
      take_min(best, cgroup_headroom(slurp(dir / "memory.max"), slurp(dir / "memory.current"),
                                     slurp(dir / "memory.stat")));
    }
    if (dir == top || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return best;
}

// v1 folds the ancestors' limits into memory.stat's hierarchical_memory_limit.
std::optional<std::uint64_t> read_v1(const fs::path& dir) {
  const auto stat = slurp(dir / "memory.stat");
  std::string limit = slurp(dir / "memory.limit_in_bytes");
  if (const auto h = stat_value(stat, "hierarchical_memory_limit")) limit = std::to_string(*h);
  return cgroup_headroom(limit, slurp(dir / "memory.usage_in_bytes"), stat);
}

fs::path under(const fs::path& root, std::string_view path) {
  const auto dir = root / fs::path(std::string(path)).relative_path();
  return fs::exists(dir) ? dir : root;  // a container's own cgroup is mounted at the root
}

}  // namespace

std::optional<std::uint64_t> cgroup_headroom(std::string_view limit, std::string_view usage, std::string_view stat) {
  const auto max = number(limit);
  const auto used = number(usage);
  if (!max || *max >= kNoLimit || !used) return std::nullopt;
  auto inactive = stat_value(stat, "inactive_file");
  if (const auto total = stat_value(stat, "total_inactive_file")) inactive = total;  // v1, hierarchical
  const std::uint64_t working = *used - std::min(*used, inactive.value_or(0));
  return *max > working ? *max - working : 0;
}

std::optional<std::uint64_t> cgroup_headroom_bytes(std::string_view self_cgroup, const fs::path& root) {
  std::optional<std::uint64_t> best;
  std::istringstream lines{std::string(self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
    const std::string_view path = std::string_view(line).substr(b + 1);
    if (controllers.empty()) {  // v2: "0::/path"
      take_min(best, walk_v2(under(root, path), root));
    } else if (("," + std::string(controllers) + ",").find(",memory,") != std::string::npos) {
      if (fs::exists(root / "memory")) take_min(best, read_v1(under(root / "memory", path)));
    }
  }
  return best;
}

std::optional<std::int64_t> mem_available_mib() {
  std::optional<std::int64_t> mib;
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::int64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") {
      mib = kib / 1024;
      break;
    }
  }
  if (const auto cg = cgroup_headroom_bytes(slurp("/proc/self/cgroup"), "/sys/fs/cgroup")) {
    const auto cap = static_cast<std::int64_t>(*cg >> 20);
    mib = mib ? std::min(*mib, cap) : cap;
  }
  return mib;
}

}  // namespace kevlaya::warm
