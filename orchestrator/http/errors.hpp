// The one error boundary of the REST door: kevlaya::Error -> HTTP status + OpenAI-shaped JSON.
// Every error response the door writes goes through error_reply() or upstream_error_reply().
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A whole HTTP response, before framing.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HeaderList headers;
};

// HTTP status for an error code (the only place statuses are chosen for errors).
int http_status(Errc code);

// {"error":{"message","type","code","src":"kevlaya"}} (plus hint/detail/retry_after_s when set).
nlohmann::json error_json(const Error& e);

// The full reply for an error: status, JSON body, Retry-After when the error carries one.
Reply error_reply(const Error& e);

// An upstream (child) error response passed through: same status, `src:"upstream"` added to the
// error object (a non-JSON body is wrapped into an OpenAI-shaped error).
Reply upstream_error_reply(int status, const std::string& body);

}  // namespace kevlaya::http
