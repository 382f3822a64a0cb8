// A small blocking HTTP/1.1 client for the commands that talk to a running door (status, load,
// unload, reload, events): upstream/'s client on a private io_context, each call bounded by a
// deadline; every failure is one sentence a user can act on ("cannot reach the door at ...").
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya::cli {

struct DoorUrl {
  std::string host;  // as written ("127.0.0.1", "localhost", "[::1]" without brackets)
  std::string port;  // "8080"
  std::string prefix;  // path prefix, "" or "/kevlaya" (no trailing '/')
  std::string text;    // the URL for messages
};

// "http://host:port[/prefix]" or "host:port" -> DoorUrl. Errors: bad_request naming the URL
// (https is refused: the door speaks plain HTTP; put a TLS proxy in front).
Result<DoorUrl> parse_door_url(const std::string& url);

struct HttpAnswer {
  int status = 0;
  std::string body;
};

struct ClientOptions {
  DoorUrl url;
  std::string api_key;  // sent as Authorization: Bearer (empty = none)
  std::chrono::seconds timeout{30};  // whole exchange (connect, send, answer)
};

// One request; any HTTP status is an answer. Errors: the door cannot be reached or did not answer
// within the timeout (unavailable / timeout, one sentence naming the URL).
Result<HttpAnswer> http_call(const ClientOptions& o, const std::string& method, const std::string& path,
                             const std::string& body = "");

// GET `path` and feed the body to `on_data` as it arrives, until the door ends it or `on_data`
// returns false. A non-2xx answer is returned whole (not fed). Only the connect and the answer's
// head are bounded by the timeout (a stream may stay quiet for long).
Result<HttpAnswer> http_stream(const ClientOptions& o, const std::string& path,
                               const std::function<bool(std::string_view)>& on_data);

// The message of a door's error body ({"error":{"message","hint","detail"}}): "message (hint)"
// plus detail lines, or the raw body when it is not one.
std::string error_text(const HttpAnswer& a);

}  // namespace kevlaya::cli
