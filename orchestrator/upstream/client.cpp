// Beast implementation of the upstream client. Timeouts: one watchdog timer per connection (UpConn)
// closes it when the pending operation's deadline passes (the operation then fails with
// beast::error::timeout) or when the silence watch finds the child hung.
#include "upstream/client.hpp"
#include "upstream/wire.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/container/small_vector.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <optional>

#include "common/fd.hpp"

namespace kevlaya::upstream {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr std::uint64_t kMaxFetchBody = 64ull << 20;  // a chat completion is far smaller
constexpr std::uint32_t kMaxHeader = 64u << 10;
constexpr std::size_t kReadBytes = 16u << 10;  // first read from a child: head + typical body
constexpr auto kTrustIdle = std::chrono::milliseconds(250);  // pooled, idle: no liveness peek below this

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

// A request to a child as it goes out: its head laid out once (HeadWriter), its body, and whether
// its connection may go back to the pool afterwards.
struct Outgoing {
  std::string head;
  std::string body;
  bool keep_alive = false;
  std::array<asio::const_buffer, 2> buffers() const { return {asio::buffer(head), asio::buffer(body)}; }
};

// Takes the body: a long conversation is not copied again on its way to the child. The fields and
// their order are those of Beast's request with keep_alive and prepare_payload (a POST, PUT or
// OPTIONS says its length even when empty).
Outgoing build_request(Request&& req, const Endpoint& ep) {
  Outgoing out;
  out.keep_alive = ep.pool != nullptr;
  out.body = std::move(req.body);
  const std::string host = ep.to_string(), bearer = ep.api_key.empty() ? "" : "Bearer " + ep.api_key,
                    length = std::to_string(out.body.size());
  HeadWriter h;
  h.set("Host", host);
  h.set("User-Agent", "kevlaya-orch");
  if (!out.body.empty()) h.set("Content-Type", "application/json");
  for (const auto& [k, v] : req.headers) h.set(k, v);
  // Set last: the child's key is the door's to send, never a caller's header.
  if (!bearer.empty()) h.set("Authorization", bearer);
  h.keep_alive(11, out.keep_alive);
  if (!out.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "OPTIONS")
    h.set("Content-Length", length);
  out.head = h.text(req.method + " " + (ep.base_path.empty() ? req.target : ep.base_path + req.target) + " HTTP/1.1");
  return out;
}

// Views of a parsed head's fields, in place up to 32 (no allocation per field).
template <class Fields>
boost::container::small_vector<std::pair<std::string_view, std::string_view>, 32> views_of(const Fields& fields) {
  boost::container::small_vector<std::pair<std::string_view, std::string_view>, 32> out;
  const auto view = [](beast::string_view v) { return std::string_view(v.data(), v.size()); };
  for (const auto& f : fields) out.emplace_back(view(f.name_string()), view(f.value()));
  return out;
}

void close_quietly(tcp::socket& s) {
  error_code ignored;
  s.shutdown(tcp::socket::shutdown_both, ignored);
  s.close(ignored);
}

// A connection to a child with its one timer: a plain socket, whose every operation (the connect
// too) the watchdog bounds. Beast's tcp_stream armed a timer for each read and write (a wait, then a
// cancel that posts a completion) and wrapped each in a layer of its own, and a silence watcher per
// exchange took a coroutine and a timer more; here one watchdog per connection wakes only when the
// earliest thing it guards is due (the pending operation's deadline, the next silence check), is
// re-armed only for an earlier moment, and stays armed across a pooled connection's exchanges.
struct UpConn {
  explicit UpConn(const asio::any_io_executor& ex) : sock(ex), watchdog(ex) {}
  asio::any_io_executor get_executor() { return sock.get_executor(); }
  tcp::socket sock;
  asio::steady_timer watchdog;
  beast::flat_buffer buf;  // what was read and not parsed yet; its room is kept for the next exchange
  std::uint64_t gen = 0;                                      // of the watchdog's current wait
  Clock::time_point armed = Clock::time_point::max();        // its expiry; max: not armed
  Clock::time_point op_deadline = Clock::time_point::max();  // of the pending read or write; max: none
  // The exchange's silence watch (StreamOptions::check_after; 0: off).
  std::uint64_t exchange = 0;
  std::chrono::milliseconds check_after{0};
  std::function<asio::awaitable<bool>()> still_alive;
  Clock::time_point last{};  // the last byte read, or the last passed check
  bool checking = false;
  bool timed_out = false;  // the watchdog closed it: op_deadline passed
  bool hung = false;       // still_alive said no: the watchdog closed it
};
using StreamPtr = std::shared_ptr<UpConn>;

void on_watchdog(const StreamPtr& c);

// Arms the watchdog for the earliest thing due, unless it wakes before that anyway.
void watch(const StreamPtr& c) {
  auto at = c->op_deadline;
  if (c->check_after.count() > 0 && !c->checking) at = std::min(at, c->last + c->check_after);
  if (at >= c->armed) return;
  c->armed = at;
  c->watchdog.expires_at(at);  // an earlier wait ends (aborted; its generation is old anyway)
  c->watchdog.async_wait([w = std::weak_ptr<UpConn>(c), gen = ++c->gen](error_code ec) {
    auto c = w.lock();
    if (!ec && c && gen == c->gen) on_watchdog(c);
  });
}

// Asks the exchange's still_alive after a silence; a "no" closes the connection (hung).
asio::awaitable<void> check_alive(StreamPtr c) {
  const auto exchange = c->exchange;
  const auto alive = c->still_alive;  // a copy: the call's frame refers to it until it ends
  bool ok = true;
  try {
    ok = co_await alive();
  } catch (const std::exception&) {  // a failed check is no evidence of a hang
  }
  c->checking = false;
  if (exchange != c->exchange) co_return;  // that exchange ended meanwhile
  if (!ok) {
    c->hung = true;
    close_quietly(c->sock);
    co_return;
  }
  c->last = Clock::now();
  watch(c);
}

void on_watchdog(const StreamPtr& c) {
  c->armed = Clock::time_point::max();
  const auto now = Clock::now();
  if (now >= c->op_deadline) {  // the pending operation fails; the caller reads timed_out
    c->timed_out = true;
    close_quietly(c->sock);
    return;
  }
  if (c->check_after.count() > 0 && !c->checking && now >= c->last + c->check_after) {
    c->checking = true;  // now, not when the check starts: the watchdog is re-armed below
    asio::co_spawn(c->get_executor(), check_alive(c), asio::detached);
  }
  watch(c);
}

// Bounds the operation that follows by `at` until it goes out of scope.
struct [[nodiscard]] Bounded {
  UpConn& c;
  ~Bounded() { c.op_deadline = Clock::time_point::max(); }
};
Bounded bound(const StreamPtr& c, Clock::time_point at) {
  c->op_deadline = at;
  watch(c);
  return Bounded{*c};
}

// Resolves (numeric hosts skip the resolver) and connects to the first address that answers, each
// attempt bounded by `deadline` (the watchdog closes the socket when it passes).
asio::awaitable<error_code> connect(const StreamPtr& c, const Endpoint& ep, Clock::time_point deadline) {
  error_code ec;
  std::vector<tcp::endpoint> addrs;
  if (const auto addr = asio::ip::make_address(ep.host, ec); !ec) {
    addrs.emplace_back(addr, ep.port);
  } else {
    tcp::resolver resolver(c->get_executor());
    const auto results = co_await resolver.async_resolve(ep.host, std::to_string(ep.port), ec_token(ec));
    if (ec) co_return ec;
    for (const auto& r : results) addrs.push_back(r.endpoint());
  }
  ec = asio::error::host_not_found;
  for (const auto& to : addrs) {
    error_code ignored;
    c->sock.close(ignored);  // a failed attempt's socket
    const auto bounded = bound(c, deadline);
    co_await c->sock.async_connect(to, ec_token(ec));
    if (c->timed_out) co_return beast::error::timeout;
    if (!ec) break;
  }
  if (!ec) set_cloexec(c->sock.native_handle());  // Asio 1.74 opens without SOCK_CLOEXEC
  co_return ec;
}

// The child closed the connection (or sent bytes nobody asked for) while it sat idle.
bool unusable(tcp::socket& s) {
  char byte = 0;
  const ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

// A reused connection that failed before any byte of the answer: the child had closed it; the
// request was not processed and goes out again on a fresh connection.
bool stale(const error_code& ec, bool got_bytes) {
  return !got_bytes && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                        ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
}

}  // namespace

struct ConnectionPool::Impl {
  struct Idle {
    StreamPtr s;
    Clock::time_point since;
  };
  mutable std::mutex mu;  // fetch/stream may run on several executors
  std::vector<Idle> idle;
  bool closed = false;
  std::size_t max_idle;
  std::chrono::milliseconds max_age;
  std::atomic<std::uint64_t> reused{0};

  // The most recently used live idle connection bound to `ex`, or null.
  StreamPtr take(const asio::any_io_executor& ex) {
    std::vector<StreamPtr> drop;
    StreamPtr out;
    {
      std::lock_guard lock(mu);
      const auto now = Clock::now();
      for (auto it = idle.end(); it != idle.begin() && !out;) {
        --it;
        const auto idle_for = now - it->since;
        // The peek costs a syscall per request; a connection idle this briefly is taken on trust
        // (a child that closed it anyway is caught by stale(): the request goes out again).
        if (idle_for > max_age || (idle_for > kTrustIdle && unusable(it->s->sock))) {
          drop.push_back(std::move(it->s));
          it = idle.erase(it);
        } else if (it->s->get_executor() == ex) {
          out = std::move(it->s);
          idle.erase(it);
        }
      }
    }
    for (auto& d : drop) close_quietly(d->sock);
    if (out) reused.fetch_add(1);
    return out;
  }

  // Keeps `s` for the next request, unless the pool is closed or full.
  void give(StreamPtr s) {
    {
      std::lock_guard lock(mu);
      if (!closed && idle.size() < max_idle) {
        idle.push_back({std::move(s), Clock::now()});
        return;
      }
    }
    close_quietly(s->sock);
  }
};

ConnectionPool::ConnectionPool(std::size_t max_idle, std::chrono::milliseconds max_age)
    : impl_(std::make_unique<Impl>()) {
  impl_->max_idle = max_idle;
  impl_->max_age = max_age;
}

ConnectionPool::~ConnectionPool() { close(); }

void ConnectionPool::close() {
  std::vector<Impl::Idle> idle;
  {
    std::lock_guard lock(impl_->mu);
    impl_->closed = true;
    idle.swap(impl_->idle);
  }
  for (auto& i : idle) close_quietly(i.s->sock);
}

std::size_t ConnectionPool::idle() const {
  std::lock_guard lock(impl_->mu);
  return impl_->idle.size();
}

std::uint64_t ConnectionPool::reused() const { return impl_->reused.load(); }

std::string Endpoint::to_string() const { return host + ":" + std::to_string(port); }

std::string Response::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (beast::iequals(k, name)) return v;
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

namespace {

// The connection of one streaming exchange; shared so a cancel hook can reach it safely after
// the end. `s` is null once the connection went back to the pool (a late hook then does nothing).
struct StreamConn {
  StreamPtr s;
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
      : ex_(std::move(ex)), conn_(std::make_shared<StreamConn>()), ep_(std::move(ep)), opt_(std::move(opt)),
        cancel_(std::move(cancel)), deadline_(Clock::now() + opt_.deadline) {
    if (opt_.first_byte_timeout.count() <= 0) opt_.first_byte_timeout = opt_.idle_timeout;
  }
  Streamer(const Streamer&) = delete;
  Streamer& operator=(const Streamer&) = delete;

  asio::awaitable<Result<StreamResult>> run(Request req, StreamCallbacks& cb);

 private:
  bool cancelled() const { return cancel_ && cancel_->cancelled(); }
  std::chrono::milliseconds silence_limit() const { return got_head_ ? opt_.idle_timeout : opt_.first_byte_timeout; }
  Bounded read_bound() {  // the silence limit of this phase, never past the overall deadline
    return bound(conn_->s, std::min(deadline_, Clock::now() + silence_limit()));
  }
  void heard() { conn_->s->last = Clock::now(); }  // a byte came: the silence watch starts over
  // This exchange on `c` (pooled or new): its silence watch, from now.
  void begin(UpConn& c) const {
    ++c.exchange;
    c.timed_out = c.hung = false;
    c.last = Clock::now();
    c.check_after = opt_.still_alive ? opt_.check_after : std::chrono::milliseconds(0);
    c.still_alive = opt_.still_alive;
  }
  // An operation's error, as the watchdog caused it: its deadline passed (beast::error::timeout).
  error_code seen(error_code ec) const { return ec && conn_->s->timed_out ? error_code(beast::error::timeout) : ec; }
  Error fail(const error_code& ec, std::string_view phase) const {
    if (conn_->s && conn_->s->hung)
      return make_error(Errc::upstream_error, ep_.to_string() + " stopped answering (no byte for " +
                                                  std::to_string(opt_.check_after.count()) +
                                                  " ms and its liveness check failed)");
    const bool overall = Clock::now() + std::chrono::milliseconds(1) >= deadline_;
    const std::string text =
        overall ? "did not finish within " + std::to_string(opt_.deadline.count()) + " ms"
                : "sent nothing for " + std::to_string(silence_limit().count()) + " ms" +
                      (got_head_ ? "" : " (no answer head)");
    return map_error(ec, ep_, phase, text);
  }
  asio::awaitable<error_code> send_and_read_header(const Outgoing& msg, std::string_view& phase);
  asio::awaitable<Result<StreamResult>> read_body(StreamCallbacks& cb);
  StreamResult ended() {
    const bool reusable = result_.complete && !cancelled() && ep_.pool && keep_alive_ && parser_->keep_alive() &&
                          conn_->s && conn_->s->buf.size() == 0;
    if (auto& c = conn_->s) {  // the exchange is over: no silence watch (the watchdog may stay armed)
      ++c->exchange;
      c->check_after = std::chrono::milliseconds(0);
      c->still_alive = nullptr;
      if (c->buf.capacity() > 4 * kReadBytes) c->buf.shrink_to_fit();  // (empty: frees it)
      if (reusable) ep_.pool->impl().give(std::move(c));
      else close_quietly(c->sock);
    }
    conn_->s.reset();
    return result_;
  }

  asio::any_io_executor ex_;
  std::shared_ptr<StreamConn> conn_;
  Endpoint ep_;
  StreamOptions opt_;
  std::shared_ptr<CancelToken> cancel_;
  Clock::time_point deadline_;
  std::optional<http::response_parser<http::string_body>> parser_;  // one per attempt
  bool keep_alive_ = false;
  bool got_head_ = false;  // the head came: idle_timeout from here on (first_byte_timeout before)
  StreamResult result_;
};

asio::awaitable<error_code> Streamer::send_and_read_header(const Outgoing& msg, std::string_view& phase) {
  error_code ec;
  parser_.emplace();
  parser_->header_limit(kMaxHeader);
  conn_->s->buf.reserve(kReadBytes);  // head and a small body in one read (Beast starts at 512 bytes)
  // Streams may be long; the deadline bounds them. Not boost::none: Beast 1.74 then rejects
  // every Content-Length body ("len_ > body_limit_" with an empty optional is true).
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  phase = "write";
  const auto rest = write_ready(conn_->s->sock, msg.buffers(), ec);  // usually all of it
  if (!ec && beast::buffer_bytes(rest) > 0) {
    const auto bounded = bound(conn_->s, deadline_);
    co_await asio::async_write(conn_->s->sock, rest, ec_token(ec));
    ec = seen(ec);
  }
  if (ec) co_return ec;
  phase = "read header";
  const auto bounded = read_bound();
  // The body's first bytes stay in buf (read_body parses them). A watchdog close fails the read
  // that is pending, which ends the loop: seen() maps it once, after.
  co_await read_parsed(conn_->s->sock, conn_->s->buf, *parser_, kReadBytes, ec, /*header_only=*/true);
  co_return seen(ec);
}

asio::awaitable<Result<StreamResult>> Streamer::run(Request req, StreamCallbacks& cb) {
  HookGuard guard{cancel_};
  if (cancel_) {
    std::weak_ptr<StreamConn> weak = conn_;
    // Posted so the close runs on the stream's executor, never concurrently with its operations.
    cancel_->set_hook([weak, ex = ex_] {
      asio::post(ex, [weak] {
        if (auto c = weak.lock(); c && c->s) close_quietly(c->s->sock);
      });
    });
  }
  result_.cancelled = cancelled();
  if (result_.cancelled) co_return ended();
  auto msg = build_request(std::move(req), ep_);
  keep_alive_ = msg.keep_alive;
  std::string_view phase;
  error_code ec;
  if (ep_.pool && (conn_->s = ep_.pool->impl().take(ex_))) {
    begin(*conn_->s);
    ec = co_await send_and_read_header(msg, phase);
    if ((result_.cancelled = cancelled())) co_return ended();
    if (ec && !stale(ec, parser_->got_some())) co_return fail(ec, phase);
    if (ec) close_quietly(conn_->s->sock);  // the child had closed it: once more on a fresh one
  }
  if (!conn_->s || ec) {
    conn_->s = std::make_shared<UpConn>(ex_);
    begin(*conn_->s);
    ec = co_await connect(conn_->s, ep_, deadline_);
    if ((result_.cancelled = cancelled())) co_return ended();
    if (ec) co_return fail(ec, "connect");
    ec = co_await send_and_read_header(msg, phase);
    if ((result_.cancelled = cancelled())) co_return ended();
    if (ec) co_return fail(ec, phase);
  }

  got_head_ = true;
  heard();
  result_.status = static_cast<int>(parser_->get().result_int());
  const auto fields = views_of(parser_->get().base());  // (a local: GCC 12 and temporaries in co_await)
  if (cb.on_head && !cb.on_head(result_.status, HeaderViews(fields.data(), fields.size()))) {
    result_.stopped = true;
    co_return ended();
  }
  co_return co_await read_body(cb);
}

asio::awaitable<Result<StreamResult>> Streamer::read_body(StreamCallbacks& cb) {
  // string_body appends at the body's current size, so clearing it after each read_some hands
  // every byte to the caller exactly once, as it arrives. (buffer_body reported body_limit for
  // Content-Length responses under Boost 1.74 in this setup; string_body does not.)
  // The bytes that came with the head are parsed once; from then on each turn reads before the
  // parser sees the buffer again (wire.hpp read_more: it must never get the same bytes twice).
  beast::flat_buffer& buf = conn_->s->buf;
  bool head_bytes = buf.size() > 0;
  while (!parser_->is_done()) {
    if ((result_.cancelled = cancelled())) co_return ended();
    error_code ec;
    if (head_bytes) {
      parse_buffered(*parser_, buf, ec);  // e.g. a whole answer read with its head
      head_bytes = false;
    } else {
      if (cb.on_idle && !co_await cb.on_idle()) {
        result_.stopped = true;
        co_return ended();
      }
      const auto bounded = read_bound();
      co_await read_more(conn_->s->sock, buf, *parser_, kReadBytes, ec);
      ec = seen(ec);
      if (!ec) heard();
    }
    if ((result_.cancelled = cancelled())) co_return ended();
    std::string& body = parser_->get().body();
    if (!body.empty()) {
      result_.body_bytes += body.size();
      // The parser is idle until the next read: the callback reads the body in place, and the
      // cleared string keeps its capacity for the next piece (no allocation per chunk).
      const bool go_on = !cb.on_chunk || cb.on_chunk(std::string_view(body));
      body.clear();
      if (!go_on) {
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
  co_return co_await s.run(std::move(req), cb);
}

asio::awaitable<Result<Response>> fetch(asio::any_io_executor ex, Endpoint ep, Request req) {
  Response out;
  StreamCallbacks cb;
  cb.on_head = [&out](int status, HeaderViews h) {
    out.status = status;
    for (const auto& [k, v] : h) out.headers.emplace_back(k, v);
    return true;
  };
  cb.on_chunk = [&out](std::string_view bytes) {  // false: past the cap
    if (out.body.size() + bytes.size() > kMaxFetchBody) return false;
    out.body.append(bytes);
    return true;
  };
  StreamOptions opt;
  opt.deadline = opt.idle_timeout = req.timeout;  // the whole exchange
  const std::string where = ep.to_string();
  auto got = co_await stream(std::move(ex), std::move(ep), std::move(req), std::move(cb), opt, nullptr);
  if (!got) co_return got.error();
  if (got->stopped) co_return make_error(Errc::upstream_error, where + " answered more than 64 MiB");
  co_return out;
}

}  // namespace kevlaya::upstream
