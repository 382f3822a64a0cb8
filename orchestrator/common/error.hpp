// Expected errors as values: one enum for everything a user can meet, mapped to an HTTP status
// and an OpenAI-shaped JSON body exactly once, at the HTTP edge (http/errors.hpp: error_reply).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kevlaya {

enum class Errc {
  ok = 0,
  bad_request,        // malformed JSON, invalid field                     -> 400
  unauthorized,       // missing / wrong API key                           -> 401
  forbidden,          // foreign Host or Origin (docs/security.md)         -> 403
  not_found,          // unknown model, pipeline, run                      -> 404
  method_not_allowed, // known path, other method                          -> 405
  payload_too_large,  // body over the limit                               -> 413
  unsupported_media,  // state-changing request without a JSON body type   -> 415
  queue_full,         // bounded queue is full                             -> 429
  child_crashed,      // the child died under a request                    -> 502
  upstream_error,     // child answered with an error / bad protocol       -> 502
  profile_failed,     // profile in cooldown after repeated failures       -> 503
  unavailable,        // shutting down, not ready                          -> 503
  timeout,            // queue wait, startup or request deadline           -> 504
  cancelled,          // stopped by an admin (POST /admin/requests/{id}/cancel) -> 410 (not retried)
  config_invalid,     // configuration problem (CLI exit 1)
  io_error,           // file system errors
  bad_model,          // unreadable / corrupt GGUF
  internal,           // a bug
};

std::string_view to_string(Errc e);

// A failure with a human message and optional detail lines (e.g. a child's last log lines).
struct Error {
  Errc code = Errc::internal;
  std::string message;
  std::string hint;                 // what the user can do about it, may be empty
  std::vector<std::string> detail;  // e.g. last log lines of a child
  int retry_after_s = 0;            // for 429/503, 0 = unknown
};

// Minimal expected<T, Error> (std::expected is C++23; no Debian package provides tl::expected).
template <class T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}                // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}            // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() { return Unit{}; }

inline Error make_error(Errc c, std::string msg, std::string hint = {}) {
  return Error{c, std::move(msg), std::move(hint), {}, 0};
}

}  // namespace kevlaya
