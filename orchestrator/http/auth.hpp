// API-key check for the REST door: `Authorization: Bearer KEY` or `X-Api-Key: KEY`, compared in
// constant time against every configured key (no early exit that would leak a prefix match).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya::http {

// True when a and b are equal; the time taken depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// Two kinds of key: `keys` for every route (none = open) and `admin` for the admin routes
// (/admin/*, /logs: none = `keys` decide there too). An admin key is accepted everywhere. On an
// admin route with admin keys set, an ordinary key is `forbidden` (403), a missing or unknown one
// `unauthorized` (401). Both lists are always compared in full (no early exit).
enum class Access { granted, unauthorized, forbidden };
Access access(const std::vector<std::string>& keys, const std::vector<std::string>& admin, bool admin_route,
              std::string_view authorization, std::string_view x_api_key);

// True when this caller may read children's log tails (error.detail of a failed start or crash,
// /status and /events `log_tail`): no admin keys are configured (they follow `keys`, like /logs),
// or it presents one of them.
bool sees_logs(const std::vector<std::string>& admin, std::string_view authorization, std::string_view x_api_key);

}  // namespace kevlaya::http
