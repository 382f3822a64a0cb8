#include "warm/page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace kevlaya::warm {

namespace {

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

Error io_error(const std::filesystem::path& p, const char* what) {
  return make_error(Errc::io_error, std::string(what) + " " + p.string() + ": " + std::strerror(errno));
}

}  // namespace

Result<Residency> residency(const std::filesystem::path& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
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
  std::vector<unsigned char> vec(r.pages);
  int rc = ::mincore(map, r.file_bytes, vec.data());
  ::munmap(map, r.file_bytes);
  if (rc != 0) return io_error(path, "mincore failed on");
  for (unsigned char v : vec) r.resident_pages += (v & 1u);
  return r;
}

double resident_pct(const std::filesystem::path& path) {
  auto r = residency(path);
  return r ? r->percent() : -1.0;
}

Status drop_from_cache(const std::filesystem::path& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return io_error(path, "cannot open");
  int rc = ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) {
    errno = rc;
    return io_error(path, "posix_fadvise(DONTNEED) failed on");
  }
  return ok_status();
}

std::optional<std::int64_t> mem_available_mib() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::int64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib / 1024;
  }
  return std::nullopt;
}

}  // namespace kevlaya::warm
