#include "http/errors.hpp"

#include "common/bounded_json.hpp"

namespace kevlaya::http {

using nlohmann::json;

int http_status(Errc code) {
  switch (code) {
    case Errc::ok: return 200;
    case Errc::bad_request: return 400;
    case Errc::unauthorized: return 401;
    case Errc::forbidden: return 403;
    case Errc::method_not_allowed: return 405;
    case Errc::unsupported_media: return 415;
    case Errc::not_found: return 404;
    case Errc::payload_too_large: return 413;
    case Errc::queue_full: return 429;
    case Errc::child_crashed: return 502;
    case Errc::upstream_error: return 502;
    case Errc::profile_failed: return 503;
    case Errc::unavailable: return 503;
    case Errc::bad_model: return 503;  // the profile's model cannot be loaded: retrying won't help soon
    case Errc::timeout: return 504;
    case Errc::cancelled: return 410;  // SDKs retry 408, 409, 429 and 5xx; a cancel must stay cancelled
    case Errc::config_invalid: return 500;
    case Errc::io_error: return 500;
    case Errc::internal: return 500;
  }
  return 500;
}

// OpenAI error "type" for a status ("invalid_request_error", "server_error", ...).
static std::string_view error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    case 504: return "timeout_error";
    default: break;
  }
  return status < 500 ? "invalid_request_error" : "server_error";
}

json error_json(const Error& e) {
  const int status = http_status(e.code);
  json err = {{"message", e.message},
              {"type", error_type(status)},
              {"code", to_string(e.code)},
              {"src", "kevlaya"}};
  if (!e.hint.empty()) err["hint"] = e.hint;
  if (!e.detail.empty()) err["detail"] = e.detail;
  if (e.retry_after_s > 0) err["retry_after_s"] = e.retry_after_s;
  return json{{"error", std::move(err)}};
}

Reply error_reply(const Error& e) {
  Reply r;
  r.status = http_status(e.code);
  r.body = error_json(e).dump(-1, ' ', false, json::error_handler_t::replace);
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

Reply upstream_error_reply(int status, const std::string& body) {
  auto parsed = parse_json_bounded(body);  // the child's body: re-serialized below
  json j = parsed ? std::move(parsed.value()) : json();
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    j["error"]["src"] = "upstream";
  } else {  // a non-object `error` becomes the message; else the whole body does
    json message = j.is_object() && j.contains("error") ? j["error"] : json(body);
    j = json{{"error", {{"message", std::move(message)}, {"type", error_type(status)}, {"code", status},
                        {"src", "upstream"}}}};
  }
  Reply r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace kevlaya::http
