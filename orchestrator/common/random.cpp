#include "common/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "common/hash.hpp"

namespace kevlaya {

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no randomness: never hand out a guessable key
    got += static_cast<std::size_t>(n);
  }
  return to_hex(buf.data(), buf.size());
}

}  // namespace kevlaya
