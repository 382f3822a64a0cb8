// A file descriptor closed when its owner goes out of scope.
#pragma once
#include <unistd.h>

namespace kevlaya {

struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
};

}  // namespace kevlaya
