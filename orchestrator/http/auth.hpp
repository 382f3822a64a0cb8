// API-key check for the REST door: `Authorization: Bearer KEY` or `X-Api-Key: KEY`, compared in
// constant time against every configured key (no early exit that would leak a prefix match).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya::http {

// True when a and b are equal; the time taken depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// The key a request presents ("" if none): the Bearer token, else the X-Api-Key value.
std::string presented_key(std::string_view authorization, std::string_view x_api_key);

// True when no keys are configured, or the presented key matches one of them.
bool authorized(const std::vector<std::string>& keys, std::string_view authorization,
                std::string_view x_api_key);

}  // namespace kevlaya::http
