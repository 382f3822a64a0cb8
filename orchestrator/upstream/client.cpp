// Beast implementation of the upstream client. Timeouts use beast::tcp_stream's own timer
// (expiry closes the socket, pending operations fail with beast::error::timeout).
#include "upstream/client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

namespace kevlaya::upstream {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr std::uint64_t kMaxFetchBody = 64ull << 20;  // a chat completion is far smaller
constexpr std::uint32_t kMaxHeader = 64u << 10;

auto ec_token(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Maps a network / protocol error to a user-facing error naming the upstream.
Error map_error(const error_code& ec, const Endpoint& ep, std::string_view phase,
                const std::string& timeout_text) {
  const std::string where = ep.to_string();
  if (ec == beast::error::timeout)
    return make_error(Errc::timeout, "upstream " + where + " " + timeout_text + " (" +
                                         std::string(phase) + ")");
  if (ec == asio::error::connection_refused)
    return make_error(Errc::upstream_error, "connection refused by " + where,
                      "is the server listening on that port?");
  if (ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
    return make_error(Errc::upstream_error,
                      "connection to " + where + " was reset (" + std::string(phase) + ")");
  if (ec == http::error::end_of_stream || ec == asio::error::eof ||
      ec == http::error::partial_message)
    return make_error(Errc::upstream_error,
                      where + " closed the connection before the response was complete");
  if (ec.category() == http::make_error_code(http::error::bad_version).category())
    return make_error(Errc::upstream_error, "bad HTTP response from " + where + ": " + ec.message());
  return make_error(Errc::upstream_error,
                    std::string(phase) + " " + where + " failed: " + ec.message());
}

// Resolves (numeric hosts skip the resolver) and connects, honouring `deadline`.
asio::awaitable<error_code> connect(beast::tcp_stream& s, const Endpoint& ep,
                                    Clock::time_point deadline) {
  error_code ec;
  auto addr = asio::ip::make_address(ep.host, ec);
  s.expires_at(deadline);
  if (!ec) {
    co_await s.async_connect(tcp::endpoint(addr, ep.port), ec_token(ec));
    co_return ec;
  }
  tcp::resolver resolver(s.get_executor());
  auto results = co_await resolver.async_resolve(ep.host, std::to_string(ep.port), ec_token(ec));
  if (ec) co_return ec;
  co_await s.async_connect(results, ec_token(ec));
  co_return ec;
}

http::request<http::string_body> build_request(const Request& req, const Endpoint& ep) {
  http::request<http::string_body> msg;
  msg.method_string(req.method);
  msg.target(req.target);
  msg.version(11);
  msg.set(http::field::host, ep.to_string());
  msg.set(http::field::user_agent, "kevlaya-orch");
  if (!req.body.empty()) msg.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : req.headers) msg.set(k, v);
  msg.keep_alive(false);
  msg.body() = req.body;
  msg.prepare_payload();
  return msg;
}

template <class Fields>
Headers to_headers(const Fields& fields) {
  Headers out;
  for (const auto& f : fields)
    out.emplace_back(std::string(f.name_string()), std::string(f.value()));
  return out;
}

void close_quietly(beast::tcp_stream& s) {
  error_code ignored;
  s.socket().shutdown(tcp::socket::shutdown_both, ignored);
  s.close();
}

}  // namespace

std::string Endpoint::to_string() const { return host + ":" + std::to_string(port); }

std::string Response::header(const std::string& name) const {
  auto eq = [](const std::string& a, const std::string& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
             return std::tolower(x) == std::tolower(y);
           });
  };
  for (const auto& [k, v] : headers)
    if (eq(k, name)) return v;
  return {};
}

void CancelToken::cancel() {
  std::function<void()> hook;
  {
    std::lock_guard lock(mu_);
    if (cancelled_.exchange(true)) return;
    hook = std::move(hook_);
    hook_ = nullptr;
  }
  if (hook) hook();
}

void CancelToken::set_hook(std::function<void()> hook) {
  {
    std::lock_guard lock(mu_);
    if (!cancelled_.load()) {
      hook_ = std::move(hook);
      return;
    }
  }
  hook();
}

void CancelToken::clear_hook() {
  std::lock_guard lock(mu_);
  hook_ = nullptr;
}

asio::awaitable<Result<Response>> fetch(asio::any_io_executor ex, Endpoint ep, Request req) {
  const auto deadline = Clock::now() + req.timeout;
  const std::string timeout_text = "did not answer within " + std::to_string(req.timeout.count()) + " ms";
  beast::tcp_stream s(ex);
  error_code ec = co_await connect(s, ep, deadline);
  if (ec) co_return map_error(ec, ep, "connect", timeout_text);

  auto msg = build_request(req, ep);
  s.expires_at(deadline);
  co_await http::async_write(s, msg, ec_token(ec));
  if (ec) co_return map_error(ec, ep, "write", timeout_text);

  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxHeader);
  parser.body_limit(kMaxFetchBody);
  s.expires_at(deadline);
  co_await http::async_read(s, buf, parser, ec_token(ec));
  if (ec) co_return map_error(ec, ep, "read", timeout_text);
  close_quietly(s);

  auto res = parser.release();
  Response out;
  out.status = static_cast<int>(res.result_int());
  out.headers = to_headers(res);
  out.body = std::move(res.body());
  co_return out;
}

namespace {

// One streaming exchange; shared so a cancel hook can reach the socket safely after the end.
struct StreamConn {
  explicit StreamConn(asio::any_io_executor ex) : s(std::move(ex)) {}
  beast::tcp_stream s;
};

// Clears the cancel hook however the stream coroutine ends.
struct HookGuard {
  std::shared_ptr<CancelToken> token;
  ~HookGuard() {
    if (token) token->clear_hook();
  }
};

class Streamer {
 public:
  Streamer(asio::any_io_executor ex, Endpoint ep, StreamOptions opt,
           std::shared_ptr<CancelToken> cancel)
      : conn_(std::make_shared<StreamConn>(ex)), ep_(std::move(ep)), opt_(opt),
        cancel_(std::move(cancel)), deadline_(Clock::now() + opt.deadline) {}

  asio::awaitable<Result<StreamResult>> run(const Request& req, StreamCallbacks& cb);

 private:
  bool cancelled() const { return cancel_ && cancel_->cancelled(); }
  void arm_timer() {  // idle timeout, never past the overall deadline
    conn_->s.expires_at(std::min(deadline_, Clock::now() + opt_.idle_timeout));
  }
  Error fail(const error_code& ec, std::string_view phase) const {
    const bool overall = Clock::now() + std::chrono::milliseconds(1) >= deadline_;
    const std::string text =
        overall ? "did not finish within " + std::to_string(opt_.deadline.count()) + " ms"
                : "sent nothing for " + std::to_string(opt_.idle_timeout.count()) + " ms";
    return map_error(ec, ep_, phase, text);
  }
  asio::awaitable<Result<StreamResult>> read_body(StreamCallbacks& cb);
  StreamResult ended() {
    close_quietly(conn_->s);
    return result_;
  }

  std::shared_ptr<StreamConn> conn_;
  Endpoint ep_;
  StreamOptions opt_;
  std::shared_ptr<CancelToken> cancel_;
  Clock::time_point deadline_;
  beast::flat_buffer buf_;
  http::response_parser<http::string_body> parser_;
  StreamResult result_;
};

asio::awaitable<Result<StreamResult>> Streamer::run(const Request& req, StreamCallbacks& cb) {
  HookGuard guard{cancel_};
  if (cancel_) {
    std::weak_ptr<StreamConn> weak = conn_;
    auto ex = conn_->s.get_executor();
    // Posted so the close runs on the stream's executor, never concurrently with its operations.
    cancel_->set_hook([weak, ex] {
      asio::post(ex, [weak] {
        if (auto c = weak.lock()) close_quietly(c->s);
      });
    });
  }
  result_.cancelled = cancelled();
  if (result_.cancelled) co_return ended();
  error_code ec = co_await connect(conn_->s, ep_, deadline_);
  if ((result_.cancelled = cancelled())) co_return ended();
  if (ec) co_return fail(ec, "connect");

  auto msg = build_request(req, ep_);
  conn_->s.expires_at(deadline_);
  co_await http::async_write(conn_->s, msg, ec_token(ec));
  if ((result_.cancelled = cancelled())) co_return ended();
  if (ec) co_return fail(ec, "write");

  parser_.header_limit(kMaxHeader);
  // Streams may be long; the deadline bounds them. Not boost::none: Beast 1.74 then rejects
  // every Content-Length body ("len_ > body_limit_" with an empty optional is true).
  parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
  arm_timer();
  co_await http::async_read_header(conn_->s, buf_, parser_, ec_token(ec));
  if ((result_.cancelled = cancelled())) co_return ended();
  if (ec) co_return fail(ec, "read header");

  result_.status = static_cast<int>(parser_.get().result_int());
  if (cb.on_head && !co_await cb.on_head(result_.status, to_headers(parser_.get().base()))) {
    result_.stopped = true;
    co_return ended();
  }
  co_return co_await read_body(cb);
}

asio::awaitable<Result<StreamResult>> Streamer::read_body(StreamCallbacks& cb) {
  // string_body appends at the body's current size, so clearing it after each read_some hands
  // every byte to the caller exactly once, as it arrives. (buffer_body reported body_limit for
  // Content-Length responses under Boost 1.74 in this setup; string_body does not.)
  while (!parser_.is_done()) {
    if ((result_.cancelled = cancelled())) co_return ended();
    arm_timer();
    error_code ec;
    co_await http::async_read_some(conn_->s, buf_, parser_, ec_token(ec));
    if ((result_.cancelled = cancelled())) co_return ended();
    std::string& body = parser_.get().body();
    if (!body.empty()) {
      std::string piece;
      piece.swap(body);
      result_.body_bytes += piece.size();
      if (cb.on_chunk && !co_await cb.on_chunk(std::string_view(piece))) {
        result_.stopped = true;
        co_return ended();
      }
    }
    if (ec) co_return fail(ec, "read body");
  }
  result_.complete = true;
  co_return ended();
}

}  // namespace

asio::awaitable<Result<StreamResult>> stream(asio::any_io_executor ex, Endpoint ep, Request req,
                                             StreamCallbacks cb, StreamOptions opt,
                                             std::shared_ptr<CancelToken> cancel) {
  Streamer s(std::move(ex), std::move(ep), opt, std::move(cancel));
  co_return co_await s.run(req, cb);
}

}  // namespace kevlaya::upstream
