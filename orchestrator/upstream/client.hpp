// HTTP/1.1 client to a child server (llama-server or any OpenAI-compatible one).
// Beast stays inside upstream/*.cpp; callers see plain values. Every call has a deadline and
// returns errors as values (Errc::timeout, Errc::upstream_error, Errc::child_crashed on reset).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::upstream {

namespace asio = boost::asio;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};

struct Request {
  std::string method = "GET";
  std::string target = "/";
  std::string body;          // sent with Content-Type: application/json when non-empty
  Headers headers;           // extra headers
  std::chrono::milliseconds timeout{30000};  // whole exchange: connect + write + read
};

struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  std::string header(const std::string& name) const;  // case-insensitive; "" if absent
};

// Performs one request on a fresh connection (loopback connects are ~20 µs; keep-alive pooling
// is an optimisation for later). Never throws for network errors.
asio::awaitable<Result<Response>> fetch(asio::any_io_executor ex, Endpoint ep, Request req);

}  // namespace kevlaya::upstream
