// Connections of the REST door: reading requests within their limits and timeouts, the key checked on
// the header, response framing, hang-up watches. The door, its accept loop and limits: door.cpp.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "http/auth.hpp"
#include "http/detail.hpp"
#include "http/framing.hpp"
#include "upstream/wire.hpp"

namespace kevlaya::http {
namespace {

using boost::system::error_code;
using tcp = asio::ip::tcp;

constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::chrono::seconds kLingerTime{1};          // reading leftovers before closing
constexpr std::uint64_t kLingerBytes = 16ull << 20;     // ... at most this much
constexpr std::size_t kWatchBuffer = 4 * kReadChunk;   // a pipelined request read while a call runs
constexpr std::size_t kKeepBuffersUpTo = 64;  // open connections that keep their read buffer when idle (1 MiB)
constexpr const char* kServerName = "kevlaya-orch";
// Response headers a page of an allowed origin may read.
constexpr const char* kExposed = "Retry-After, Location, X-Kevlaya-Model, X-Kevlaya-Queue-Ms, X-Kevlaya-Swap-Ms, X-Kevlaya-Run, X-Kevlaya-Backend, X-Kevlaya-Remote";

// Read failures that deserve an answer (the rest just close the connection).
std::optional<Error> read_error(const error_code& ec, const ServerOptions& opt) {
  if (ec == bhttp::error::body_limit)
    return make_error(Errc::payload_too_large, "request body exceeds " +
                                                   std::to_string(opt.limits.max_body_bytes) + " bytes");
  if (ec == bhttp::error::header_limit)
    return make_error(Errc::bad_request,
                      "request header exceeds " + std::to_string(opt.max_header_bytes) + " bytes");
  if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
      ec == bhttp::error::partial_message)
    return std::nullopt;
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category())
    return make_error(Errc::bad_request, "malformed HTTP request: " + ec.message());
  return std::nullopt;
}

// What a request's header says of its key, before any body is read. The gate (router.cpp) still
// decides every answer; this decides only whether the body is worth reading.
enum class KeyVerdict {
  trusted,  // a valid key, or none needed by this door: the body is read as always
  keyless,  // no valid key on a request the gate serves without one: read, but its slot stays evictable
  refused,  // the gate refuses it (its key, or a check before it): answered from the header alone
};

// The requests the gate serves without a key: preflights and GET /health, /ui, / (a superset of
// router.cpp's gate, so that `refused` is always refused there).
bool served_without_key(const RouteMatch& m, bhttp::verb method) {
  if (method == bhttp::verb::options) return true;
  return method == bhttp::verb::get && (m.route == Route::health || m.route == Route::ui || m.route == Route::root);
}

KeyVerdict key_verdict(const Door& d, const Request& head) {
  const std::string_view target(head.target().data(), head.target().size());
  const auto m = match_route(target.substr(0, target.find('?')));
  const auto a = access(d.opt.api_keys, d.opt.admin_api_keys, is_admin(m, head.method()),
                        header(head, bhttp::field::authorization), header(head, "X-Api-Key"));
  if (a == Access::granted) return KeyVerdict::trusted;
  return served_without_key(m, head.method()) ? KeyVerdict::keyless : KeyVerdict::refused;
}

}  // namespace

std::string_view header(const Request& req, bhttp::field f) {
  auto it = req.find(f);
  if (it == req.end()) return {};
  return std::string_view(it->value().data(), it->value().size());
}

std::string_view header(const Request& req, std::string_view name) {
  auto it = req.find(beast::string_view(name.data(), name.size()));
  if (it == req.end()) return {};
  return std::string_view(it->value().data(), it->value().size());
}

Reply json_reply(int status, const nlohmann::json& body, HeaderList headers) {
  Reply r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.headers = std::move(headers);
  return r;
}

// ---- Connection ---------------------------------------------------------------------------

Connection::Connection(std::shared_ptr<Door> door, tcp::socket socket)
    : door_(std::move(door)), socket_(std::move(socket)), watchdog_(socket_.get_executor()) {
  door_->conns.insert(this);
}

Connection::~Connection() {
  door_->conns.erase(this);
  if (evicted_) --door_->evicting;
  if (refusing_) --door_->refusing;
}

void Connection::evict() {
  evicted_ = true;
  ++door_->evicting;
  spdlog::debug("http: closing an idle connection to make room for a new one");
  close();
}

void Connection::close_if_idle() {
  if (!in_request_) close();
}

void Connection::close() {
  error_code ec;
  socket_.close(ec);
  ++watchdog_gen_;
  watchdog_.cancel();  // its handler holds this connection
}

Connection::Bounded Connection::bound(std::chrono::seconds s) {
  deadline_ = Clock::now() + s;
  if (deadline_ < armed_) arm(deadline_);  // else the watchdog fires first and looks again
  return Bounded{*this};
}

void Connection::arm(Clock::time_point at) {
  armed_ = at;
  const auto gen = ++watchdog_gen_;
  watchdog_.expires_at(at);  // cancels an earlier wait, whose handler then sees an old generation
  watchdog_.async_wait([self = shared_from_this(), gen](error_code ec) { self->on_watchdog(ec, gen); });
}

void Connection::on_watchdog(error_code ec, std::uint64_t gen) {
  if (ec || gen != watchdog_gen_) return;  // re-armed, or the connection ended
  armed_ = Clock::time_point::max();
  if (deadline_ == Clock::time_point::max()) return;  // nothing pending: nothing to bound
  if (Clock::now() < deadline_) return arm(deadline_);
  spdlog::debug("http: closing a connection whose read or write timed out");
  close();  // the pending operation fails; the request loop ends
}

namespace {

// A request that threw, answered in its route's API shape (plain function: GCC 12 and
// temporaries inside coroutines).
Reply crash_reply(const Error& e, const Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  return reshape_error(error_reply(e), shape_of_path(target.substr(0, target.find('?'))));
}

}  // namespace

asio::awaitable<void> Connection::run() {
  auto self = shared_from_this();
  while (!door_->draining) {
    auto req = co_await read_request();
    if (!req) break;
    version_ = req->version();
    keep_alive_ = req->keep_alive() && !reserve_only_ && !body_skipped_;
    cors_origin_.clear();
    head_sent_ = false;
    bytes_out_ = 0;
    in_request_ = true;
    ++door_->in_flight;
    std::optional<Error> crashed;
    try {
      co_await route(*door_, *req, *this);
    } catch (const nlohmann::json::type_error& e) {  // a body field no typed read caught: the caller's error
      spdlog::warn("http: unchecked field type on {} {}: {}", std::string(req->method_string()),
                   std::string(req->target()), e.what());
      crashed = make_error(Errc::bad_request, std::string("request body: a field has the wrong type (") + e.what() + ")");
    } catch (const std::exception& e) {  // a bug: answer 500 if we still can, then close
      spdlog::error("http: internal error on {} {}: {}", std::string(req->method_string()),
                    std::string(req->target()), e.what());
      crashed = make_error(Errc::internal, "internal error");
    }
    if (crashed && !head_sent_) co_await send(crash_reply(*crashed, *req));
    if (!held_.empty()) co_await flush();  // a stream's held bytes are this response's (the relay flushes them)
    in_request_ = false;
    busy_ = false;
    last_active_ = Clock::now();
    door_->request_done();
    if (body_skipped_) co_await linger_close();  // refused on its header: its body is dropped, not read
    if (crashed || failed_ || !keep_alive_) break;
  }
  close();  // sends the FIN itself: a shutdown() first cost a second pass through the TCP stack
}

asio::awaitable<std::optional<Request>> Connection::read_request() {
  error_code ec;
  const auto& opt = door_->opt;
  const auto header_timeout = std::chrono::seconds(opt.limits.header_timeout_s);
  if (requests_ > 0 && buffer_.size() == 0) {  // between requests: the idle timeout applies
    const auto bounded = bound(std::chrono::seconds(opt.limits.idle_timeout_s));
    // With many connections open a kept-alive one waits holding no read buffer (10,000 idle ones
    // held 16 KiB each); with few, each keeps its own (a 16 KiB allocation and free per request
    // saved). Readiness first, then a read. The reactor may still hold the readiness of the last
    // request's bytes (read without it): that wake finds nothing, and the wait goes on under this
    // bound, not the header timeout.
    for (std::size_t n = 0; n == 0;) {
      if (door_->conns.size() > kKeepBuffersUpTo) buffer_.shrink_to_fit();  // (nothing buffered: frees it)
      co_await socket_.async_wait(asio::ip::tcp::socket::wait_read, ec_token(ec));
      if (ec) co_return std::nullopt;
      upstream::non_blocking(socket_, ec);
      n = ec ? 0 : socket_.read_some(buffer_.prepare(kReadChunk), ec);
      if (ec && ec != asio::error::would_block) co_return std::nullopt;  // the client closed or reset
      buffer_.commit(n);
      ec = {};
    }
  }
  ++requests_;
  // A new connection must send its whole header within header_timeout_s of being accepted (an
  // idle or trickling client cannot hold a slot for long); a kept-alive one, of its first byte.
  // Then the whole request must arrive within read_timeout_s.
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(opt.max_header_bytes));
  parser.body_limit(static_cast<std::uint64_t>(opt.limits.max_body_bytes));
  {
    const auto bounded = bound(header_timeout);
    // A request usually arrives with its connection: read and parsed here when it has, so the
    // first request of a connection is not a posted completion behind the reactor's next turn.
    if (buffer_.size() == 0) upstream::read_ready(socket_, buffer_, kReadChunk);
    upstream::parse_buffered(parser, buffer_, ec, /*header_only=*/true);
    if (!ec && !parser.is_header_done())
      co_await upstream::read_parsed(socket_, buffer_, parser, kReadChunk, ec, /*header_only=*/true);
  }
  // Framing Beast accepts but a proxy must not (request smuggling): refused before any body.
  std::optional<std::string> framing;  // (no ?: here: GCC 12 double-destroys its temporaries in coroutines)
  if (!ec) framing = framing_problem(parser.get());
  if (framing) {
    keep_alive_ = false;
    co_await send(error_reply(make_error(Errc::bad_request, "malformed HTTP request: " + *framing)));
    co_await linger_close();
    co_return std::nullopt;
  }
  // The key is checked on the header: a request the gate will refuse is answered without its body
  // (a stranger cannot hold a slot for read_timeout_s by trickling one), then the connection
  // closes; only an authorised request makes its connection unevictable while its body arrives.
  KeyVerdict verdict = KeyVerdict::refused;
  if (!ec) verdict = key_verdict(*door_, parser.get());
  if (!ec && verdict == KeyVerdict::refused && !parser.is_done()) {  // (no body: read whole, kept alive)
    body_skipped_ = true;
    co_return parser.release();
  }
  if (!ec && verdict == KeyVerdict::trusted) busy_ = true;
  if (!ec) {  // the rest of the request, within read_timeout_s of its header
    const auto bounded = bound(std::chrono::seconds(opt.limits.read_timeout_s));
    if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      co_await asio::async_write(socket_, asio::buffer(kContinue), ec_token(ec));
    }
    if (!ec) upstream::parse_buffered(parser, buffer_, ec);  // the body that came with the header
    if (!ec && !parser.is_done()) {
      // Each read takes the buffer's free room (at least kReadChunk) and the parser drains the
      // buffer as it goes: room for the body, up to 64 KiB, saves reads and scheduler rounds.
      const auto len = parser.content_length();
      buffer_.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(len ? *len : kReadChunk, 4 * kReadChunk)));
      co_await upstream::read_parsed(socket_, buffer_, parser, kReadChunk, ec);
      if (buffer_.capacity() > kReadChunk) buffer_.shrink_to_fit();  // an idle connection keeps little
    }
  }
  if (ec) {
    if (auto err = read_error(ec, opt)) {
      keep_alive_ = false;
      co_await send(error_reply(*err));
      co_await linger_close();
    }
    co_return std::nullopt;
  }
  busy_ = true;  // a keyless request to an open route: whole now, and being answered
  co_return parser.release();
}

// After an early error reply, read (and drop) what the client is still sending for a moment, so
// closing does not reset the connection before it has read our answer.
asio::awaitable<void> Connection::linger_close() {
  closing_ = true;  // answered: the first to make room for a new connection
  busy_ = false;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  const auto bounded = bound(kLingerTime);
  std::uint64_t total = 0;
  std::array<char, kReadChunk> sink{};
  while (!ec && total < kLingerBytes)
    total += co_await socket_.async_read_some(asio::buffer(sink), ec_token(ec));
  failed_ = true;
}

void Connection::refuse(bool drain) {
  refusing_ = true;  // counted apart from the open connections until it is gone
  ++door_->refusing;
  keep_alive_ = false;
  auto answer = [self = shared_from_this(), drain]() -> asio::awaitable<void> {
    Error e = make_error(Errc::unavailable, "too many connections");
    e.retry_after_s = 1;
    co_await self->send(error_reply(e));
    if (drain) co_await self->linger_close();
    self->close();
  };
  asio::co_spawn(socket_.get_executor(), std::move(answer), asio::detached);
}

bool Connection::write_done(error_code ec) {  // a plain call: every response and chunk ends here
  if (ec) {
    failed_ = true;
    spdlog::debug("http: client write failed: {}", ec.message());
  }
  return !ec;
}

namespace {

void set_common(upstream::HeadWriter& h, std::string_view content_type, const HeaderList& headers, const std::string& cors_origin) {
  h.set("Server", kServerName);
  if (!content_type.empty()) h.set("Content-Type", content_type);
  for (const auto& [k, v] : headers) h.set(k, v);
  if (cors_origin.empty()) return;
  h.set("Access-Control-Allow-Origin", cors_origin);
  h.set("Access-Control-Expose-Headers", kExposed);
  h.set("Vary", "Origin");
}

}  // namespace

asio::awaitable<bool> Connection::send(Reply r) {
  if (failed_) co_return false;
  const bool no_body = r.status / 100 == 1 || r.status == 204 || r.status == 304;  // RFC 9110 6.4.1
  if (no_body) r.body.clear();
  std::string_view content_type = r.content_type;
  if (r.status == 204) content_type = {};
  upstream::HeadWriter h;
  set_common(h, content_type, r.headers, cors_origin_);
  if (door_->draining) keep_alive_ = false;
  h.keep_alive(version_, keep_alive_);
  const std::string length = std::to_string(r.body.size());
  if (!no_body) h.set("Content-Length", length);
  const auto head = h.text(upstream::status_line(version_, r.status));
  bytes_out_ += static_cast<std::int64_t>(r.body.size());
  status_ = r.status;
  head_sent_ = true;
  error_code ec;
  const auto bounded = bound(std::chrono::seconds(door_->opt.limits.read_timeout_s));
  const std::array<asio::const_buffer, 2> bytes{asio::buffer(head), asio::buffer(r.body)};
  // What the socket takes at once (usually all) goes without an operation; only the rest waits.
  const auto rest = upstream::write_ready(socket_, bytes, ec);
  if (!ec && beast::buffer_bytes(rest) > 0) co_await asio::async_write(socket_, rest, ec_token(ec));
  co_return write_done(ec);
}

asio::awaitable<bool> Connection::start_stream(int status, std::string content_type, HeaderList headers) {
  if (!hold_head(status, content_type, headers)) co_return false;
  co_return co_await flush();
}

asio::awaitable<bool> Connection::chunk(std::string_view data) {
  if (!hold_chunk(data)) co_return false;
  co_return co_await flush();
}

bool Connection::hold_head(int status, std::string_view content_type, const HeaderList& headers) {
  if (failed_) return false;
  upstream::HeadWriter h;
  set_common(h, content_type, headers, cors_origin_);
  // HTTP/1.0 has no chunked coding (RFC 9112 6.1): its stream is the bytes as they come, ended
  // by closing the connection.
  chunked_ = version_ >= 11;
  if (!chunked_ || door_->draining) keep_alive_ = false;
  status_ = status;
  head_sent_ = true;
  h.keep_alive(version_, keep_alive_);
  if (chunked_) h.set("Transfer-Encoding", "chunked");
  held_ += h.text(upstream::status_line(version_, status));
  return true;
}

bool Connection::hold_chunk(std::string_view data) {
  if (failed_) return false;
  if (data.empty()) return true;  // an empty chunk would end the body
  bytes_out_ += static_cast<std::int64_t>(data.size());
  if (chunked_) {  // the framing Beast's make_chunk writes: hex size, CRLF, data, CRLF
    std::array<char, 16> hex{};
    const auto end = std::to_chars(hex.data(), hex.data() + hex.size(), data.size(), 16).ptr;
    held_.append(hex.data(), end).append("\r\n").append(data).append("\r\n");
  } else {
    held_.append(data);
  }
  return true;
}

asio::awaitable<bool> Connection::flush() {
  if (failed_) co_return false;
  if (held_.empty()) co_return true;
  error_code ec;
  // A client that stops reading must not pin the upstream forever.
  const auto bounded = bound(std::chrono::seconds(door_->opt.limits.read_timeout_s));
  const auto rest = upstream::write_ready(socket_, asio::buffer(held_), ec);  // as in send()
  if (!ec && beast::buffer_bytes(rest) > 0) co_await asio::async_write(socket_, rest, ec_token(ec));
  held_.clear();
  if (held_.capacity() > 4 * kReadChunk) std::string().swap(held_);  // a big stream's room goes with it
  co_return write_done(ec);
}

asio::awaitable<bool> Connection::finish_stream(const HeaderList& trailers) {
  if (failed_) co_return false;
  if (chunked_) {  // the last chunk and its trailers, as Beast's make_chunk_last writes them
    held_.append("0\r\n");
    for (const auto& [k, v] : trailers) held_.append(k).append(": ").append(v).append("\r\n");
    held_.append("\r\n");
  }  // (else no trailers: the close ends the body)
  co_return co_await flush();
}

void Connection::watch_disconnect(std::shared_ptr<upstream::CancelToken> token) {
  peek_for_hangup(++watch_gen_, std::move(token));
}

void Connection::peek_for_hangup(std::uint64_t gen, std::shared_ptr<upstream::CancelToken> token) {
  // A plain handler, not a coroutine: this runs on every model call, before its upstream request.
  // A peeking receive, not async_wait: the reactor tries it at once and then keeps it on the
  // descriptor's read queue, where async_wait re-registers the descriptor (an epoll_ctl) each time.
  socket_.async_receive(
      asio::buffer(&peek_byte_, 1), tcp::socket::message_peek,
      [self = shared_from_this(), gen, token = std::move(token)](error_code ec, std::size_t n) mutable {
        if (gen != self->watch_gen_ || ec == asio::error::operation_aborted) return;  // unwatched
        if (ec || n == 0) {  // eof, reset: the client went away
          spdlog::debug("http: client went away; cancelling its upstream request");
          // No further read: this peek took the socket's one EOF edge (epoll is edge-triggered and
          // Asio stops reading speculatively after an exhausted read), so a read would wait for
          // idle_timeout_s with the socket in CLOSE-WAIT. The connection closes after this call.
          self->keep_alive_ = false;
          token->cancel();
          return;
        }
        // A pipelined next request: its bytes (here now, so this read does not wait) go where
        // read_request() looks first, and the watch goes on, so a hang-up behind them still
        // cancels the call. Bounded: past kWatchBuffer the rest waits in the socket, unwatched.
        if (self->buffer_.size() >= kWatchBuffer) return;
        const auto got = self->socket_.read_some(self->buffer_.prepare(kReadChunk), ec);
        if (ec) return;  // the next read reports it
        self->buffer_.commit(got);
        self->peek_for_hangup(gen, std::move(token));
      });
}

const std::string& Connection::peer() const {
  if (!peer_) {
    error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string() : ep.address().to_string();
  }
  return *peer_;
}

void Connection::unwatch() {
  ++watch_gen_;
  error_code ec;
  socket_.cancel(ec);  // ends the pending peek; no other operation is pending now
}

}  // namespace kevlaya::http
