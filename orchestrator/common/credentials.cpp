#include "common/credentials.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "common/strings.hpp"

namespace kevlaya {

bool is_credential_header(std::string_view name) {
  const std::string lower = ascii_lower(std::string(name));
  // Substrings rather than names: X-Goog-Api-Key, X-Auth-Token, X-Amz-Security-Token, Ocp-Apim-
  // Subscription-Key, X-Vault-Token and the rest all contain one of these.
  for (const std::string_view part : {"auth", "token", "key", "secret", "password", "passwd", "cookie",
                                      "credential", "signature"})
    if (lower.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace kevlaya
