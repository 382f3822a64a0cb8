#include "common/credentials.hpp"

#include <string_view>

#include "common/strings.hpp"

namespace kevlaya {

// Searched in place, case ignored: the door asks this per request of its session headers.
bool is_credential_header(std::string_view name) {
  // Substrings rather than names: X-Goog-Api-Key, X-Auth-Token, X-Amz-Security-Token, Ocp-Apim-
  // Subscription-Key, X-Vault-Token and the rest all contain one of these.
  for (const std::string_view part : {"auth", "token", "key", "secret", "password", "passwd", "cookie",
                                      "credential", "signature"})
    if (contains_ascii_ci(name, part)) return true;
  return false;
}

}  // namespace kevlaya
