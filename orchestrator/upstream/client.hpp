// HTTP/1.1 client to a child server (llama-server or any OpenAI-compatible one).
// Beast stays inside upstream/*.cpp; callers see plain values. Every call has a deadline and
// returns errors as values: connection refused / reset / EOF before a complete response ->
// Errc::upstream_error (message names host:port), deadline or idle timeout -> Errc::timeout.
// Executor contract: pass a strand or the executor of a single-threaded io_context (the timer,
// the socket and cancellation all run on it).
// GCC 12 pitfall: never pass a braced temporary (`co_await fetch(ex, ep, Request{...})`) inside a
// co_await expression: GCC 12.2 relocates it bitwise into the frame (ASan: bad-free). Name it first.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "upstream/pool.hpp"

namespace kevlaya::upstream {

namespace asio = boost::asio;
using Headers = std::vector<std::pair<std::string, std::string>>;
// An answer's head fields as the client read them: views valid during on_head only.
using HeaderViews = std::span<const std::pair<std::string_view, std::string_view>>;

struct Endpoint {
  Endpoint() = default;
  Endpoint(std::string h, std::uint16_t p) : host(std::move(h)), port(p) {}
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  // Sent as "Authorization: Bearer <key>" on every request when set (a child's per-start
  // --api-key). A secret: to_string() and every message leave it out.
  std::string api_key;
  // Put before every request target ("/prefix" of a remote's URL; "" for a child).
  std::string base_path;
  // Keep-alive connections to this child (null: a fresh connection per request).
  std::shared_ptr<ConnectionPool> pool;
  std::string to_string() const;  // "host:port"
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

// Performs one request, on an idle connection of `ep.pool` when there is one (a connection the
// child closed meanwhile is replaced by a fresh one before any byte of the answer), else on a
// fresh connection. Never throws for network errors.
asio::awaitable<Result<Response>> fetch(asio::any_io_executor ex, Endpoint ep, Request req);

// Lets another coroutine (or thread) abort a stream, e.g. when the downstream client went away.
// cancel() closes the upstream connection, so the child sees the disconnect and stops generating.
class CancelToken {
 public:
  void cancel();                 // idempotent, callable from any thread
  bool cancelled() const { return cancelled_.load(); }

  // Used by stream(): `hook` runs once, on cancel() (at once if already cancelled).
  void set_hook(std::function<void()> hook);
  void clear_hook();             // the stream ended; later cancels do nothing

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;  // guards hook_ only: cancel() may race the stream's start/end
  std::function<void()> hook_;
};

struct StreamCallbacks {
  // on_head and on_chunk are plain calls, not coroutines: they run for every piece of every
  // answer, and a caller that relays holds what they give it until on_idle (no frame per step).
  // Called once with the status line and headers (views into the read buffer: copy what is kept),
  // before any body byte. Return false to stop.
  std::function<bool(int status, HeaderViews headers)> on_head;
  // Called with decoded body bytes as they arrive (chunked framing already removed). The view
  // is valid during the call. Return false to stop (closes upstream).
  std::function<bool(std::string_view bytes)> on_chunk;
  // Called before each wait for more of the body (what came so far has been handed over), so a
  // caller that holds what it relays writes it then. Return false to stop (closes upstream).
  std::function<asio::awaitable<bool>()> on_idle;
};

struct StreamOptions {
  std::chrono::milliseconds deadline{300000};    // whole exchange
  std::chrono::milliseconds idle_timeout{30000};  // max silence between two reads once the head is in
  // Request sent -> the head of the answer ("no byte at all"; a non-streamed generation sends
  // nothing until it is done). 0 = idle_timeout.
  std::chrono::milliseconds first_byte_timeout{0};
  // Silence watch (0 = off): after `check_after` without a byte, `still_alive` is asked; true waits
  // another `check_after`, false ends the stream at once with Errc::upstream_error ("stopped answering").
  std::chrono::milliseconds check_after{0};
  std::function<asio::awaitable<bool>()> still_alive;
};

struct StreamResult {
  int status = 0;               // 0 if cancelled before the head arrived
  std::uint64_t body_bytes = 0; // bytes handed to on_chunk
  bool complete = false;        // the whole response was read
  bool cancelled = false;       // ended by CancelToken::cancel()
  bool stopped = false;         // a callback returned false
};

// Sends `req` (on a pooled connection like fetch) and hands the response body to the callbacks as it arrives
// (for SSE pass-through). Cancel and callback stops are results, not errors; network failures
// and timeouts are errors. `req.timeout` is ignored in favour of `opt`. `cancel` may be null.
asio::awaitable<Result<StreamResult>> stream(asio::any_io_executor ex, Endpoint ep, Request req,
                                             StreamCallbacks cb, StreamOptions opt,
                                             std::shared_ptr<CancelToken> cancel);

}  // namespace kevlaya::upstream
