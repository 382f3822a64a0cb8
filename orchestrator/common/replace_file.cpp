#include "common/replace_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/fd.hpp"

namespace kevlaya {

Status replace_file(const std::filesystem::path& path, std::string_view text) {
  auto tmp = path;
  tmp += ".tmp";
  const auto fail = [&](const char* step) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error(Errc::io_error, "cannot write " + path.string() + " (" + step + "): " + std::strerror(err));
  };
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.fd < 0) return fail("open");
  for (std::size_t at = 0; at < text.size();) {
    const auto n = ::write(fd.fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    at += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.fd) != 0) return fail("fsync");
  if (::close(std::exchange(fd.fd, -1)) != 0) return fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
  return ok_status();
}

}  // namespace kevlaya
