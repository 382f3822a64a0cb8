#include "common/loopback.hpp"

#include <arpa/inet.h>

#include <string>

namespace kevlaya {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string text(host);
  unsigned char b[16] = {};
  if (::inet_pton(AF_INET, text.c_str(), b) == 1) return b[0] == 127;
  if (::inet_pton(AF_INET6, text.c_str(), b) != 1) return false;
  for (int i = 0; i < 10; ++i)
    if (b[i] != 0) return false;
  const bool mapped = b[10] == 0xff && b[11] == 0xff, compatible = b[10] == 0 && b[11] == 0;
  if (compatible && b[12] == 0 && b[13] == 0 && b[14] == 0) return b[15] == 1;  // ::1
  return (mapped || compatible) && b[12] == 127;
}

}  // namespace kevlaya
