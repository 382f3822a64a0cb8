// A file descriptor closed when its owner goes out of scope, and what children may inherit of ours.
#pragma once
#include <unistd.h>

#include <utility>

namespace kevlaya {

struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f = -1) : fd(f) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}  // moved, never copied
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd, -1));
    return *this;
  }
  void reset(int f = -1) noexcept {  // closes the descriptor held, then holds `f`
    if (fd >= 0) ::close(fd);
    fd = f;
  }
};

// Marks `fd` close-on-exec: for descriptors a library opens without O_CLOEXEC (Boost 1.74's Asio
// sockets, Boost.Process pipes, spdlog's files). False when fcntl fails (a bad descriptor).
bool set_cloexec(int fd) noexcept;

// For a forked child before exec (async-signal-safe: no allocation, no locks): marks every
// descriptor >= 3 close-on-exec, so a child inherits only stdin, stdout and stderr whatever a
// library forgot. Marked, not closed: Boost.Process reports a failed exec on a close-on-exec pipe.
void cloexec_above_stdio() noexcept;

namespace detail {
// The fallbacks of cloexec_above_stdio for kernels without close_range(CLOSE_RANGE_CLOEXEC)
// (before 5.11), exposed for tests: the listing of /proc/self/fd (false when it cannot be read),
// and every number below RLIMIT_NOFILE.
bool cloexec_listed_fds() noexcept;
void cloexec_up_to_limit() noexcept;
}  // namespace detail

}  // namespace kevlaya
