#include "common/error.hpp"

namespace kevlaya {

std::string_view to_string(Errc e) {
  switch (e) {
    case Errc::ok: return "ok";
    case Errc::bad_request: return "bad_request";
    case Errc::unauthorized: return "unauthorized";
    case Errc::forbidden: return "forbidden";
    case Errc::method_not_allowed: return "method_not_allowed";
    case Errc::unsupported_media: return "unsupported_media_type";
    case Errc::not_found: return "not_found";
    case Errc::payload_too_large: return "payload_too_large";
    case Errc::queue_full: return "queue_full";
    case Errc::child_crashed: return "child_crashed";
    case Errc::upstream_error: return "upstream_error";
    case Errc::profile_failed: return "profile_failed";
    case Errc::unavailable: return "unavailable";
    case Errc::timeout: return "timeout";
    case Errc::cancelled: return "cancelled";
    case Errc::config_invalid: return "config_invalid";
    case Errc::io_error: return "io_error";
    case Errc::bad_model: return "bad_model";
    case Errc::internal: return "internal";
  }
  return "internal";
}

}  // namespace kevlaya
