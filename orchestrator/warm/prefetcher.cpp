#include "warm/prefetcher.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <algorithm>
#include <climits>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>

#include "common/clock.hpp"
#include "common/fd.hpp"

#include "warm/page_cache.hpp"

namespace kevlaya::warm {

namespace {

namespace fs = std::filesystem;

// <linux/ioprio.h> is not in every libc's headers; the ABI values are stable.
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

constexpr std::size_t kReadBytes = 1 << 20;  // pread buffer; the data itself is thrown away

// Reads [off, off+len) so the pages land in the page cache; false on a read error.
bool read_range(int fd, std::uint64_t off, std::uint64_t len, std::vector<char>& buf) {
  while (len > 0) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(len, buf.size()));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;  // 0: the file shrank meanwhile, nothing more to read
    off += static_cast<std::uint64_t>(n);
    len -= static_cast<std::uint64_t>(n);
  }
  return true;
}

void lower_io_priority() {
  // who=PROCESS with id 0 means the calling thread: only the worker reads at idle priority.
  ::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift);
}

}  // namespace

const char* to_string(PrefetchEnd e) {
  switch (e) {
    case PrefetchEnd::done: return "done";
    case PrefetchEnd::memory_floor: return "memory_floor";
    case PrefetchEnd::cancelled: return "cancelled";
    case PrefetchEnd::error: return "error";
  }
  return "?";
}

Prefetcher::Prefetcher(PrefetchOptions opt) : opt_(std::move(opt)) {
  if (opt_.chunk_bytes == 0) opt_.chunk_bytes = 16ULL << 20;
  if (opt_.idle_io_priority) boost::asio::post(pool_, [] { lower_io_priority(); });
}

Prefetcher::~Prefetcher() {
  ++gen_;
  pool_.join();
}

void Prefetcher::prefetch(std::vector<fs::path> files, Done done) {
  const std::uint64_t gen = ++gen_;
  boost::asio::post(pool_, [this, gen, files = std::move(files), done = std::move(done)]() mutable {
    PrefetchResult r = run(gen, std::move(files));
    if (done) done(r);
  });
}

void Prefetcher::cancel() { ++gen_; }

void Prefetcher::wait_idle() {
  std::promise<void> p;
  auto f = p.get_future();
  boost::asio::post(pool_, [&p] { p.set_value(); });  // the pool has one thread: runs after the rest
  f.wait();
}

std::optional<std::int64_t> Prefetcher::available() const {
  return opt_.mem_available ? opt_.mem_available() : mem_available_mib();
}

PrefetchResult Prefetcher::run(std::uint64_t gen, std::vector<fs::path> files) {
  const auto t0 = std::chrono::steady_clock::now();
  PrefetchResult res;
  res.files = std::move(files);
  // Cached pages count as "available", so reading does not lower MemAvailable by itself: the
  // budget is what was above the floor at the start, re-checked against the live value per chunk.
  auto avail = available();
  std::int64_t budget = avail ? (*avail - opt_.min_available_mib) << 20 : INT64_MAX;
  for (const auto& f : res.files) {
    res.end = read_file(gen, f, budget, res);
    if (res.end != PrefetchEnd::done) break;
  }
  res.ms = ms_since(t0);
  return res;
}

PrefetchEnd Prefetcher::read_file(std::uint64_t gen, const fs::path& f, std::int64_t& budget,
                                  PrefetchResult& res) {
  const UniqueFd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0) {
    res.message = "cannot open " + f.string() + ": " + std::strerror(errno);
    return PrefetchEnd::error;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::vector<char> buf(kReadBytes);
  PrefetchEnd end = PrefetchEnd::done;
  for (std::uint64_t off = 0; off < size; off += opt_.chunk_bytes) {
    if (gen_.load() != gen) { end = PrefetchEnd::cancelled; break; }
    const std::uint64_t len = std::min<std::uint64_t>(opt_.chunk_bytes, size - off);
    auto avail = available();
    bool under_floor = avail && *avail - opt_.min_available_mib < static_cast<std::int64_t>(len >> 20);
    if (under_floor || budget < static_cast<std::int64_t>(len)) {
      res.message = "MemAvailable " + (avail ? std::to_string(*avail) : std::string("?")) +
                    " MiB is at the prefetch floor of " + std::to_string(opt_.min_available_mib) + " MiB";
      end = PrefetchEnd::memory_floor;
      break;
    }
    // WILLNEED queues one large read; readahead()/WILLNEED alone are asynchronous and capped by the
    // device's read_ahead_kb, so the chunk is then read for real (pread, on this idle-I/O thread).
    ::posix_fadvise(fd.fd, static_cast<off_t>(off), static_cast<off_t>(len), POSIX_FADV_WILLNEED);
    if (!read_range(fd.fd, off, len, buf)) {
      res.message = "read error in " + f.string() + ": " + std::strerror(errno);
      end = PrefetchEnd::error;
      break;
    }
    budget -= static_cast<std::int64_t>(len);
    res.bytes_advised += len;
  }
  return end;
}

}  // namespace kevlaya::warm
