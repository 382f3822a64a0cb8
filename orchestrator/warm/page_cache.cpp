#include "warm/page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/fd.hpp"

namespace kevlaya::warm {

namespace {

Error io_error(const std::filesystem::path& p, const char* what) {
  return make_error(Errc::io_error, std::string(what) + " " + p.string() + ": " + std::strerror(errno));
}

// Files up to this many pages are counted exactly; larger ones are sampled. mincore costs about
// 10 ms per GiB (a page-cache lookup per page), and the figure is asked for on the switch path and
// on every /status and /metrics request, where a 4 GiB model took 36-60 ms.
constexpr std::uint64_t kExactPages = 64 * 1024;  // 256 MiB of 4 KiB pages
constexpr std::uint64_t kSampleWindows = 256;     // evenly spread windows ...
constexpr std::uint64_t kWindowPages = 64;        // ... of 256 KiB each: ~16k pages looked up

// Counts resident pages among `pages` pages of `map` starting at page `first`.
bool count_resident(const unsigned char* map, std::uint64_t page, std::uint64_t first, std::uint64_t pages,
                    std::vector<unsigned char>& vec, std::uint64_t& resident) {
  vec.resize(pages);
  if (::mincore(const_cast<unsigned char*>(map) + first * page, pages * page, vec.data()) != 0) return false;
  for (unsigned char v : vec) resident += (v & 1u);
  return true;
}

}  // namespace

Result<Residency> residency(const std::filesystem::path& path) {
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return io_error(path, "cannot open");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return io_error(path, "cannot stat");
  Residency r;
  r.file_bytes = static_cast<std::uint64_t>(st.st_size);
  if (r.file_bytes == 0) return r;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  r.pages = (r.file_bytes + page - 1) / page;
  // Mapping reads nothing: mincore only reports which pages the cache already holds.
  void* map = ::mmap(nullptr, r.file_bytes, PROT_READ, MAP_SHARED, f.fd, 0);
  if (map == MAP_FAILED) return io_error(path, "cannot map");
  const auto* base = static_cast<const unsigned char*>(map);
  std::vector<unsigned char> vec;
  bool ok = true;
  if (r.pages <= kExactPages) {
    ok = count_resident(base, page, 0, r.pages, vec, r.resident_pages);
  } else {
    // Stratified sample: the cache fills in contiguous readahead runs, so evenly spread windows
    // track the true share closely; scaled back to the whole file.
    std::uint64_t seen = 0, resident = 0;
    const std::uint64_t stride = r.pages / kSampleWindows;
    for (std::uint64_t w = 0; ok && w < kSampleWindows; ++w) {
      const std::uint64_t first = w * stride + (stride - kWindowPages) / 2;
      ok = count_resident(base, page, first, kWindowPages, vec, resident);
      seen += kWindowPages;
    }
    r.sampled = true;
    r.resident_pages = ok ? (resident * r.pages + seen / 2) / seen : 0;
  }
  ::munmap(map, r.file_bytes);
  if (!ok) return io_error(path, "mincore failed on");
  return r;
}

double resident_pct(const std::filesystem::path& path) {
  auto r = residency(path);
  return r ? r->percent() : -1.0;
}

namespace {

struct Remembered {
  double pct = -1;
  std::chrono::steady_clock::time_point at;
};

// Entries for files no longer asked about are dropped by clearing the whole map past this size
// (a reload may name new files; each call re-measures within its budget).
constexpr std::size_t kMaxRemembered = 1 << 16;

}  // namespace

std::optional<double> resident_pct_cached(const std::filesystem::path& path, std::size_t& fresh_left) {
  static std::mutex mu;
  static std::unordered_map<std::string, Remembered> cache;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(path.native());
    const bool known = it != cache.end();
    if (known && (now - it->second.at < kResidencyMaxAge || fresh_left == 0)) return it->second.pct;
    if (!known && fresh_left == 0) return std::nullopt;
    --fresh_left;
  }
  const double pct = resident_pct(path);  // outside the lock: other callers are not held
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxRemembered) cache.clear();
  cache[path.native()] = Remembered{pct, now};
  return pct;
}

Status drop_from_cache(const std::filesystem::path& path) {
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return io_error(path, "cannot open");
  int rc = ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) {
    errno = rc;
    return io_error(path, "posix_fadvise(DONTNEED) failed on");
  }
  return ok_status();
}

}  // namespace kevlaya::warm
