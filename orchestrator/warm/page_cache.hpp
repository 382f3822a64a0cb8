// Page-cache queries and hints for model files (Linux: mmap + mincore, posix_fadvise).
// Pure functions of the file system; no threads, no asio.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "common/error.hpp"
#include "warm/host_memory.hpp"  // mem_available_mib

namespace kevlaya::warm {

struct Residency {
  std::uint64_t file_bytes = 0;
  std::uint64_t pages = 0;
  std::uint64_t resident_pages = 0;  // estimated from a sample when `sampled`
  bool sampled = false;              // files over 256 MiB: 256 evenly spread 256 KiB windows
  // 0..100; an empty file counts as fully resident.
  double percent() const { return pages == 0 ? 100.0 : 100.0 * double(resident_pages) / double(pages); }
};

// How much of `path` is in the OS page cache now (mmap + mincore; reads nothing). Exact up to
// 256 MiB; larger files are sampled so the call stays around a millisecond whatever the size.
Result<Residency> residency(const std::filesystem::path& path);

// residency(path)->percent(), or -1 when the file cannot be inspected (missing, unreadable).
double resident_pct(const std::filesystem::path& path);

// Status pages list every model on each call: a door with thousands of model files would spend
// ~1 s of mincore per call (a large file is sampled in ~1 ms). So each call gets a budget of fresh
// measurements; a figure younger than kResidencyMaxAge is reused, an older one is refreshed while
// the budget lasts and otherwise kept (it is at most a few calls old).
inline constexpr std::size_t kResidencyFreshPerCall = 64;
inline constexpr std::chrono::milliseconds kResidencyMaxAge{2000};

// resident_pct(path) through a process-wide cache (thread-safe): measures when the remembered
// figure is older than kResidencyMaxAge and `fresh_left` > 0 (then decrements it), else returns
// the remembered one; nullopt when the file was never measured and the budget is spent.
std::optional<double> resident_pct_cached(const std::filesystem::path& path, std::size_t& fresh_left);

// Asks the kernel to drop the file's clean pages (POSIX_FADV_DONTNEED); used by tests/benchmarks.
Status drop_from_cache(const std::filesystem::path& path);

}  // namespace kevlaya::warm
