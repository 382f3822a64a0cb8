#include "runtime/state_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kevlaya::runtime {

namespace {

// The pid written by the holder, or "" when unreadable (it may be writing it right now).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : std::string();
}

}  // namespace

Result<StateLock> StateLock::acquire(const std::filesystem::path& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  const auto path = state_dir / kFileName;
  // O_CLOEXEC: children must not inherit (and so prolong) the lock.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return make_error(Errc::io_error, "cannot open " + path.string() + ": " + std::strerror(errno),
                      "check that state_dir is a writable directory");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = holder_pid(fd);
    ::close(fd);
    if (err != EWOULDBLOCK)
      return make_error(Errc::io_error, "cannot lock " + path.string() + ": " + std::strerror(err));
    return make_error(Errc::unavailable,
                      "state directory " + state_dir.string() + " is in use by another kevlaya-orch" +
                          (pid.empty() ? std::string() : " (pid " + pid + ")"),
                      "one instance per state_dir: stop that one, send requests to its door, or set "
                      "another state_dir");
  }
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    // The lock holds without the pid; a refused instance just cannot name us.
  }
  return StateLock(fd);
}

}  // namespace kevlaya::runtime
