// upstream::fetch / upstream::stream against a scripted loopback server in this file.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "upstream/client.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace kevlaya;
using namespace kevlaya::upstream;
using namespace std::chrono_literals;

namespace {

constexpr auto kGenerous = 10s;  // test deadlines: only hit if the code under test is broken
StreamOptions options(std::chrono::milliseconds deadline, std::chrono::milliseconds idle) {
  StreamOptions o;
  o.deadline = deadline;
  o.idle_timeout = idle;
  return o;
}
StreamOptions generous() { return options(kGenerous, kGenerous); }

// A one-shot event: wait() suspends until set() (a timer that never expires, cancelled to wake).
class Event {
 public:
  explicit Event(asio::io_context& io) : t_(io, asio::steady_timer::time_point::max()) {}
  void set() {
    set_ = true;
    t_.cancel();
  }
  asio::awaitable<void> wait() {
    while (!set_) {
      error_code ec;
      co_await t_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

 private:
  asio::steady_timer t_;
  bool set_ = false;
};

// Loopback listener whose behaviour each test scripts as a coroutine.
struct TestServer {
  explicit TestServer(asio::io_context& io) : acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", acc.local_endpoint().port()}; }
  tcp::acceptor acc;
};

// Reads one request (head + Content-Length body) and returns it whole.
asio::awaitable<std::string> read_request(tcp::socket& s) {
  std::string data;
  auto n = co_await asio::async_read_until(s, asio::dynamic_buffer(data), "\r\n\r\n", asio::use_awaitable);
  std::size_t len = 0;
  auto pos = data.find("Content-Length: ");
  if (pos != std::string::npos && pos < n) len = std::stoul(data.substr(pos + 16));
  if (data.size() < n + len)
    co_await asio::async_read(s, asio::dynamic_buffer(data), asio::transfer_exactly(n + len - data.size()),
                              asio::use_awaitable);
  co_return data;
}

asio::awaitable<void> send(tcp::socket& s, std::string text) {
  co_await asio::async_write(s, asio::buffer(text), asio::use_awaitable);
}

std::string chunk(const std::string& payload) {
  char len[16];
  std::snprintf(len, sizeof len, "%zx\r\n", payload.size());
  return len + payload + "\r\n";
}

// Waits until the peer closes the connection; true if it did (EOF or reset).
asio::awaitable<bool> peer_closes(tcp::socket& s) {
  char byte;
  error_code ec;
  co_await s.async_read_some(asio::buffer(&byte, 1), asio::redirect_error(asio::use_awaitable, ec));
  co_return ec == asio::error::eof || ec == asio::error::connection_reset;
}

// Runs the coroutines to completion, rethrowing the first exception (e.g. a failed REQUIRE).
template <class... Coros>
void run_all(asio::io_context& io, Coros&&... coros) {
  std::exception_ptr first;
  auto done = [&](std::exception_ptr e) {
    if (e && !first) first = e;
  };
  (asio::co_spawn(io, std::forward<Coros>(coros), done), ...);
  io.run_for(kGenerous * 2);
  if (first) std::rethrow_exception(first);
}

const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// What stream() made of an answer the server sent in two parts.
struct TwoParts {
  int head_status = 0;
  std::string content_type;
  std::vector<std::string> chunks;
  std::optional<Result<StreamResult>> got;
};

// A streamed answer sent as `first` after the request, then `second` only once the client has
// seen its head (`after_head`) or its first chunk: the second part cannot arrive with the first.
TwoParts stream_in_two_parts(const std::string& first, const std::string& second, bool after_head) {
  asio::io_context io;
  TestServer srv(io);
  Event seen(io);
  TwoParts out;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, first);
        co_await seen.wait();
        co_await send(s, second);
      },
      [&]() -> asio::awaitable<void> {
        StreamCallbacks cb;
        cb.on_head = [&](int st, HeaderViews h) {
          out.head_status = st;
          for (auto& [k, v] : h)
            if (k == "Content-Type") out.content_type = v;
          if (after_head) seen.set();
          return true;
        };
        cb.on_chunk = [&](std::string_view b) {
          out.chunks.emplace_back(b);
          seen.set();
          return true;
        };
        Request r{"POST", "/x", "{}", {}, 1s};
        out.got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, generous(), nullptr);
      });
  return out;
}

}  // namespace

TEST_CASE("fetch returns status, headers and body and sends the request body", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  std::string seen;
  std::optional<Result<Response>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        seen = co_await read_request(s);
        co_await send(s, "HTTP/1.1 201 Created\r\nX-Test: yes\r\nContent-Length: 5\r\n\r\nhello");
      },
      [&]() -> asio::awaitable<void> {
        Request r{"POST", "/v1/chat/completions", R"({"a":1})", {{"X-Trace", "t1"}}, 5s};
        got = co_await fetch(io.get_executor(), srv.endpoint(), r);
      });
  REQUIRE(got);
  REQUIRE(got->ok());
  CHECK((*got)->status == 201);
  CHECK((*got)->body == "hello");
  CHECK((*got)->header("x-test") == "yes");
  CHECK((*got)->header("missing").empty());
  CHECK(seen.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0) == 0);
  CHECK(seen.find("Content-Type: application/json") != std::string::npos);
  CHECK(seen.find("X-Trace: t1") != std::string::npos);
  CHECK(seen.substr(seen.size() - 7) == R"({"a":1})");
}

TEST_CASE("fetch decodes a chunked response", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  std::optional<Result<Response>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, kChunkedHead + chunk("ab") + chunk("cde") + "0\r\n\r\n");
      },
      [&]() -> asio::awaitable<void> {
        Request r;  // named: GCC 12 miscompiles braced temporaries inside co_await
        got = co_await fetch(io.get_executor(), srv.endpoint(), r);
      });
  REQUIRE(got->ok());
  CHECK((*got)->body == "abcde");
}

TEST_CASE("fetch times out when the server never answers", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  Event release(io);
  std::optional<Result<Response>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await release.wait();  // hold the connection open, silent
      },
      [&]() -> asio::awaitable<void> {
        Request r;
        r.timeout = 100ms;
        got = co_await fetch(io.get_executor(), srv.endpoint(), r);
        release.set();
      });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::timeout);
  CHECK(got->error().message.find(srv.endpoint().to_string()) != std::string::npos);
}

TEST_CASE("fetch reports connection refused with host:port", "[upstream]") {
  asio::io_context io;
  std::uint16_t port = 0;
  {
    TestServer closed(io);  // take a free port, then release it so nothing listens there
    port = closed.endpoint().port;
  }
  std::optional<Result<Response>> got;
  run_all(io, [&]() -> asio::awaitable<void> {
    Endpoint ep{"127.0.0.1", port};
    Request r;
    got = co_await fetch(io.get_executor(), ep, r);
  });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::upstream_error);
  CHECK(got->error().message.find("refused") != std::string::npos);
  CHECK(got->error().message.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

// The connect is bounded like every other operation (the connection's watchdog): a listener whose
// accept queue is full drops new SYNs, so without the bound the connect would wait for the kernel's
// SYN retries (minutes).
TEST_CASE("stream: a connect the child never completes fails at the deadline, naming the timeout", "[upstream]") {
  asio::io_context io;
  tcp::acceptor full(io);
  full.open(tcp::v4());
  full.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  full.listen(0);  // room for one connection, never accepted
  tcp::socket queued(io);
  queued.connect(full.local_endpoint());  // fills the queue
  const Endpoint ep{"127.0.0.1", full.local_endpoint().port()};
  std::optional<Result<StreamResult>> got;
  const auto t0 = std::chrono::steady_clock::now();
  run_all(io, [&]() -> asio::awaitable<void> {
    Request r;
    got = co_await stream(io.get_executor(), ep, r, {}, options(300ms, 300ms), nullptr);
  });
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(got);
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::timeout);
  CHECK(got->error().message.find("(connect)") != std::string::npos);
  CHECK(took >= 250ms);
  CHECK(took < 5s);
}

TEST_CASE("fetch reports a connection closed before the response", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  std::optional<Result<Response>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
        s.close();
      },
      [&]() -> asio::awaitable<void> {
        Request r;  // named: GCC 12 miscompiles braced temporaries inside co_await
        got = co_await fetch(io.get_executor(), srv.endpoint(), r);
      });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::upstream_error);
  CHECK(got->error().message.find("closed the connection") != std::string::npos);
}

TEST_CASE("stream delivers each chunk before the server sends the next", "[upstream]") {
  // The second chunk exists only after the client saw the first.
  const auto r = stream_in_two_parts(kChunkedHead + chunk("data: one\n\n"), chunk("data: two\n\n") + "0\r\n\r\n",
                                     /*after_head=*/false);
  const auto& got = r.got;
  REQUIRE(got->ok());
  CHECK((*got)->complete);
  CHECK((*got)->status == 200);
  CHECK(r.head_status == 200);
  CHECK(r.content_type == "text/event-stream");
  CHECK(r.chunks == std::vector<std::string>{"data: one\n\n", "data: two\n\n"});
  CHECK((*got)->body_bytes == 22);
}

TEST_CASE("stream: a last chunk whose final CRLF comes in a later read ends the answer, no assertion", "[upstream]") {
  // The streamer parsed what came with the head, got need_more, then let Beast's read operation
  // parse the same bytes again: Boost 1.74's chunk parser asserts on that (an ASan build aborted).
  const auto r = stream_in_two_parts(kChunkedHead + "0\r\n\r", "\n", /*after_head=*/true);  // its last CRLF cut
  const auto& got = r.got;
  REQUIRE(got->ok());
  CHECK((*got)->complete);
  CHECK(r.chunks.empty());
}

TEST_CASE("stream cancel from another coroutine closes the upstream connection", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  Event first_seen(io);
  auto token = std::make_shared<CancelToken>();
  bool server_saw_close = false;
  std::optional<Result<StreamResult>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, kChunkedHead + chunk("data: one\n\n"));
        server_saw_close = co_await peer_closes(s);  // would hang forever without the cancel
      },
      [&]() -> asio::awaitable<void> {  // plays the HTTP door noticing its client went away
        co_await first_seen.wait();
        token->cancel();
      },
      [&]() -> asio::awaitable<void> {
        StreamCallbacks cb;
        cb.on_chunk = [&](std::string_view) {
          first_seen.set();
          return true;
        };
        Request r;
        got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, generous(), token);
      });
  REQUIRE(got->ok());
  CHECK((*got)->cancelled);
  CHECK_FALSE((*got)->complete);
  CHECK(server_saw_close);
}

TEST_CASE("stream stops and closes when on_chunk returns false", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  bool server_saw_close = false;
  std::optional<Result<StreamResult>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, kChunkedHead + chunk("stop here"));
        server_saw_close = co_await peer_closes(s);
      },
      [&]() -> asio::awaitable<void> {
        StreamCallbacks cb;
        cb.on_chunk = [](std::string_view) { return false; };
        Request r;
        got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, generous(), nullptr);
      });
  REQUIRE(got->ok());
  CHECK((*got)->stopped);
  CHECK(server_saw_close);
}

TEST_CASE("stream idle timeout fires when the server goes silent mid-body", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  Event release(io);
  std::optional<Result<StreamResult>> got;
  std::string received;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, kChunkedHead + chunk("partial"));
        co_await release.wait();
      },
      [&]() -> asio::awaitable<void> {
        StreamCallbacks cb;
        cb.on_chunk = [&](std::string_view b) {
          received += b;
          return true;
        };
        Request r;
        StreamOptions opt = options(kGenerous, 100ms);
        got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, opt, nullptr);
        release.set();
      });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::timeout);
  CHECK(got->error().message.find("sent nothing for 100 ms") != std::string::npos);
  CHECK(received == "partial");
}

TEST_CASE("stream with a cancelled token never connects", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  auto token = std::make_shared<CancelToken>();
  token->cancel();
  std::optional<Result<StreamResult>> got;
  run_all(io, [&]() -> asio::awaitable<void> {
    Request r;
    StreamCallbacks cb;
    StreamOptions opt;
    got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, opt, token);
  });
  REQUIRE(got->ok());
  CHECK((*got)->cancelled);
  CHECK((*got)->status == 0);
}

TEST_CASE("stream passes a Content-Length body and an error status through", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  std::string body;
  std::optional<Result<StreamResult>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading");
      },
      [&]() -> asio::awaitable<void> {
        StreamCallbacks cb;
        cb.on_chunk = [&](std::string_view b) {
          body += b;
          return true;
        };
        Request r;
        got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, generous(), nullptr);
      });
  INFO((got->ok() ? std::string() : got->error().message));
  REQUIRE(got->ok());
  CHECK((*got)->status == 503);
  CHECK((*got)->complete);
  CHECK(body == "loading");
}

namespace {

const std::string kKeepAliveOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

Endpoint pooled(const TestServer& srv, std::shared_ptr<ConnectionPool> pool) {
  Endpoint ep = srv.endpoint();
  ep.pool = std::move(pool);
  return ep;
}

asio::awaitable<int> get_status(asio::io_context& io, Endpoint ep) {
  const Request r{"GET", "/health", "", {}, 5s};
  auto res = co_await fetch(io.get_executor(), ep, r);
  co_return res ? res->status : 0;
}

}  // namespace

TEST_CASE("pool: consecutive requests (fetch and stream) reuse one keep-alive connection", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  auto pool = std::make_shared<ConnectionPool>();
  int accepted = 0;
  std::vector<int> statuses;
  std::string streamed;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        ++accepted;
        for (int i = 0; i < 2; ++i) {  // two fetches, then a stream, on this one connection
          const auto req = co_await read_request(s);
          CHECK(req.find("Connection: close") == std::string::npos);
          co_await send(s, kKeepAliveOk);
        }
        co_await read_request(s);
        co_await send(s, kChunkedHead + chunk("data: 1\n\n") + "0\r\n\r\n");
      },
      [&]() -> asio::awaitable<void> {
        const Endpoint ep = pooled(srv, pool);
        for (int i = 0; i < 2; ++i) statuses.push_back(co_await get_status(io, ep));
        StreamCallbacks cb;
        cb.on_chunk = [&](std::string_view b) {
          streamed += b;
          return true;
        };
        const Request r{"POST", "/v1/chat/completions", "{}", {}, 5s};
        const StreamOptions opt = generous();
        auto res = co_await stream(io.get_executor(), ep, r, cb, opt, nullptr);
        CHECK((res && res->complete));
      });
  CHECK(statuses == std::vector<int>{200, 200});
  CHECK(streamed == "data: 1\n\n");
  CHECK(accepted == 1);
  CHECK(pool->reused() == 2);
  CHECK(pool->idle() == 1);  // back after the stream, for the next request
}

TEST_CASE("pool: a connection the child closed while idle is not reused, the request goes out fresh",
          "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  auto pool = std::make_shared<ConnectionPool>();
  int accepted = 0;
  std::vector<int> statuses;
  Event closed(io);
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        {
          auto s = co_await srv.acc.async_accept(asio::use_awaitable);
          ++accepted;
          co_await read_request(s);
          co_await send(s, kKeepAliveOk);
        }  // closed here: e.g. the child restarted or its keep-alive timeout passed
        closed.set();
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        ++accepted;
        co_await read_request(s);
        co_await send(s, kKeepAliveOk);
      },
      [&]() -> asio::awaitable<void> {
        const Endpoint ep = pooled(srv, pool);
        statuses.push_back(co_await get_status(io, ep));
        co_await closed.wait();
        statuses.push_back(co_await get_status(io, ep));
      });
  // Served on a new connection, whether the closed one was noticed idle (peek) or on write.
  CHECK(statuses == std::vector<int>{200, 200});
  CHECK(accepted == 2);
}

TEST_CASE("pool: once closed (the child stopped), it keeps and hands out nothing", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  auto pool = std::make_shared<ConnectionPool>();
  int accepted = 0;
  std::vector<int> statuses;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 2; ++i) {
          auto s = co_await srv.acc.async_accept(asio::use_awaitable);
          ++accepted;
          co_await read_request(s);
          co_await send(s, kKeepAliveOk);
          co_await peer_closes(s);  // the client closes it: the pool was closed
        }
      },
      [&]() -> asio::awaitable<void> {
        const Endpoint ep = pooled(srv, pool);
        statuses.push_back(co_await get_status(io, ep));
        CHECK(pool->idle() == 1);
        pool->close();
        CHECK(pool->idle() == 0);
        statuses.push_back(co_await get_status(io, ep));
        CHECK(pool->idle() == 0);
      });
  CHECK(statuses == std::vector<int>{200, 200});
  CHECK(accepted == 2);
  CHECK(pool->reused() == 0);
}

// Issue 32 item 2: liveness of a silent server (StreamOptions::check_after / still_alive).
namespace {

// generous(), with a silence watch every 100 ms whose liveness check answers `alive` (counted).
StreamOptions watched(int& checks, bool alive) {
  StreamOptions opt = generous();
  opt.check_after = 100ms;
  opt.still_alive = [&checks, alive]() -> asio::awaitable<bool> {
    ++checks;
    co_return alive;
  };
  return opt;
}

}  // namespace

TEST_CASE("stream: a server silent past check_after whose liveness check fails ends at once as stopped answering",
          "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  Event release(io);
  std::optional<Result<StreamResult>> got;
  int checks = 0;
  bool closed = false;
  auto took = std::chrono::steady_clock::duration{};
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        closed = co_await peer_closes(s);  // the client gives up on it
        release.set();
      },
      [&]() -> asio::awaitable<void> {
        const StreamOptions opt = watched(checks, false);
        Request r;
        StreamCallbacks none;  // named: no braced temporary in a co_await (client.hpp)
        const auto t0 = std::chrono::steady_clock::now();
        got = co_await stream(io.get_executor(), srv.endpoint(), r, none, opt, nullptr);
        took = std::chrono::steady_clock::now() - t0;
        co_await release.wait();
      });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::upstream_error);
  CHECK(got->error().message.find("stopped answering") != std::string::npos);
  CHECK(checks == 1);
  CHECK(closed);
  CHECK(took < 2s);  // not the 10 s timeouts
}

TEST_CASE("stream: a liveness check that passes keeps waiting, and the late answer arrives whole", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  std::optional<Result<StreamResult>> got;
  int checks = 0;
  std::string received;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        asio::steady_timer t(s.get_executor(), 350ms);  // a long generation: nothing meanwhile
        co_await t.async_wait(asio::use_awaitable);
        co_await send(s, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone");
      },
      [&]() -> asio::awaitable<void> {
        const StreamOptions opt = watched(checks, true);
        StreamCallbacks cb;
        cb.on_chunk = [&](std::string_view b) {
          received += b;
          return true;
        };
        Request r;
        got = co_await stream(io.get_executor(), srv.endpoint(), r, cb, opt, nullptr);
      });
  REQUIRE(got->ok());
  CHECK(got->value().complete);
  CHECK(received == "done");
  CHECK(checks >= 2);  // asked after each 100 ms of silence
}

TEST_CASE("stream: first_byte_timeout bounds the wait for the head, idle_timeout only the gaps after it", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  Event release(io);
  std::optional<Result<StreamResult>> got;
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await release.wait();  // never a byte
      },
      [&]() -> asio::awaitable<void> {
        StreamOptions opt = options(kGenerous, kGenerous);
        opt.first_byte_timeout = 100ms;
        Request r;
        StreamCallbacks none;
        got = co_await stream(io.get_executor(), srv.endpoint(), r, none, opt, nullptr);
        release.set();
      });
  REQUIRE_FALSE(got->ok());
  CHECK(got->error().code == Errc::timeout);
  CHECK(got->error().message.find("sent nothing for 100 ms (no answer head)") != std::string::npos);
}

// One watchdog per pooled connection (not one timer per read): it was armed for the first
// exchange's short limit, and must neither end the second exchange early (its limit is longer) nor
// let the third overrun its own (shorter again) one.
TEST_CASE("pool: a reused connection's timeouts are its current exchange's, not the last one's", "[upstream]") {
  asio::io_context io;
  TestServer srv(io);
  auto pool = std::make_shared<ConnectionPool>();
  Event done(io);
  std::vector<std::optional<Result<StreamResult>>> got(3);
  run_all(
      io,
      [&]() -> asio::awaitable<void> {
        auto s = co_await srv.acc.async_accept(asio::use_awaitable);
        co_await read_request(s);
        co_await send(s, kKeepAliveOk);  // at once
        co_await read_request(s);
        asio::steady_timer t(io, 400ms);  // past the first exchange's 150 ms, within the second's
        co_await t.async_wait(asio::use_awaitable);
        co_await send(s, kKeepAliveOk);
        co_await read_request(s);
        co_await done.wait();  // never answers the third
      },
      [&]() -> asio::awaitable<void> {
        const Endpoint ep = pooled(srv, pool);
        const Request r{"POST", "/v1/chat/completions", "{}", {}, 5s};
        StreamCallbacks none;
        got[0] = co_await stream(io.get_executor(), ep, r, none, options(kGenerous, 150ms), nullptr);
        got[1] = co_await stream(io.get_executor(), ep, r, none, options(kGenerous, 2s), nullptr);
        const auto t0 = std::chrono::steady_clock::now();
        got[2] = co_await stream(io.get_executor(), ep, r, none, options(kGenerous, 100ms), nullptr);
        CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // its own 100 ms, not a watchdog armed later
        done.set();
      });
  REQUIRE(got[0]->ok());
  CHECK(got[0]->value().complete);
  REQUIRE(got[1]->ok());  // waited 400 ms on a connection whose watchdog was set for 150 ms
  CHECK(got[1]->value().complete);
  REQUIRE_FALSE(got[2]->ok());
  CHECK(got[2]->error().code == Errc::timeout);
  CHECK(pool->reused() == 2);
}
