#include "http/auth.hpp"

#include <cctype>

namespace kevlaya::http {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length so a short guess costs as much as a long one.
  const std::size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

namespace {

// The key a request presents ("" if none): the Bearer token, else the X-Api-Key value.
std::string presented_key(std::string_view authorization, std::string_view x_api_key) {
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() > kBearer.size()) {
    bool is_bearer = true;
    for (std::size_t i = 0; i < kBearer.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(authorization[i])) != kBearer[i]) is_bearer = false;
    if (is_bearer) {
      auto token = authorization.substr(kBearer.size());
      while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
      while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
      return std::string(token);
    }
  }
  return std::string(x_api_key);
}

bool listed(const std::vector<std::string>& keys, const std::string& key) {
  bool ok = false;
  for (const auto& k : keys) ok |= constant_time_equal(key, k);  // no short-circuit
  return ok && !key.empty();
}

}  // namespace

Access access(const std::vector<std::string>& keys, const std::vector<std::string>& admin, bool admin_route,
              std::string_view authorization, std::string_view x_api_key) {
  const bool guarded = admin_route && !admin.empty();
  if (keys.empty() && !guarded) return Access::granted;  // an open door: no key to read (every request)
  const std::string key = presented_key(authorization, x_api_key);
  const bool is_user = listed(keys, key), is_admin = listed(admin, key);
  if (guarded) return is_admin ? Access::granted : is_user ? Access::forbidden : Access::unauthorized;
  return is_user || is_admin ? Access::granted : Access::unauthorized;
}

bool sees_logs(const std::vector<std::string>& admin, std::string_view authorization, std::string_view x_api_key) {
  return admin.empty() || listed(admin, presented_key(authorization, x_api_key));
}

}  // namespace kevlaya::http
