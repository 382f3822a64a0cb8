#include "common/credentials.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace kevlaya {

bool is_credential_header(std::string_view name) {
  // Lowered on the stack (the door asks this per request of its session headers); a longer name,
  // which no client sends, takes a string.
  std::array<char, 128> buf{};
  std::string long_name;
  char* out = buf.data();
  if (name.size() > buf.size()) long_name.resize(name.size()), out = long_name.data();
  std::transform(name.begin(), name.end(), out, [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
  const std::string_view lower(out, name.size());
  // Substrings rather than names: X-Goog-Api-Key, X-Auth-Token, X-Amz-Security-Token, Ocp-Apim-
  // Subscription-Key, X-Vault-Token and the rest all contain one of these.
  for (const std::string_view part : {"auth", "token", "key", "secret", "password", "passwd", "cookie",
                                      "credential", "signature"})
    if (lower.find(part) != std::string_view::npos) return true;
  return false;
}

}  // namespace kevlaya
