#include "common/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/fd.hpp"

namespace kevlaya {

std::string file_kind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a regular file";
  }
}

std::string read_file_tail(const std::filesystem::path& path, std::uint64_t from, std::uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  if (from > size) from = 0;
  if (size - from > max_bytes) from = size - max_bytes;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

Result<std::string> read_bounded_file(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.fd < 0) {
    const int e = errno;
    return make_error(Errc::io_error, (e == ENOENT ? "file not found" : std::string("cannot read: ") + std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return make_error(Errc::io_error, std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(Errc::io_error, file_kind(st.st_mode) + ", not a regular file");
  const auto too_big = [&](std::uint64_t n) {
    return make_error(Errc::io_error, std::to_string(n) + " bytes, more than the " + std::to_string(max_bytes) +
                                          "-byte limit for " + what);
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) return too_big(static_cast<std::uint64_t>(st.st_size));
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {  // to the end, counted: a file that grows after fstat is still refused past the limit
    const ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::io_error, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) return too_big(out.size() + static_cast<std::size_t>(n));
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace kevlaya
