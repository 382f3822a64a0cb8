#include "common/fd.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <cstddef>

namespace kevlaya {

namespace {

constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC (linux/close_range.h)
constexpr rlim_t kMaxScan = 1 << 20;              // an unlimited RLIMIT_NOFILE is scanned this far

// Layout of getdents64's records (struct linux_dirent64; glibc declares no wrapper before 2.30).
struct Dirent64 {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

}  // namespace

bool set_cloexec(int fd) noexcept { return ::fcntl(fd, F_SETFD, FD_CLOEXEC) == 0; }

namespace detail {

bool cloexec_listed_fds() noexcept {
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(Dirent64) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* e = reinterpret_cast<const Dirent64*>(buf + at);
      at += e->d_reclen;
      int fd = 0;
      const char* c = e->d_name;
      for (; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      if (c != e->d_name && *c == '\0' && fd >= 3 && fd != dir) set_cloexec(fd);
    }
  }
  ::close(dir);
  return true;
}

void cloexec_up_to_limit() noexcept {
  rlimit rl{};
  rlim_t top = kMaxScan;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < kMaxScan)
    top = rl.rlim_cur;
  for (rlim_t fd = 3; fd < top; ++fd) set_cloexec(static_cast<int>(fd));
}

}  // namespace detail

void cloexec_above_stdio() noexcept {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec) == 0) return;
#endif
  if (!detail::cloexec_listed_fds()) detail::cloexec_up_to_limit();
}

}  // namespace kevlaya
