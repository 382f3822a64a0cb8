// The floor of the project's stack: the leanest kept-alive HTTP relay that Boost 1.74's Asio
// coroutines and Beast's parsers make, measured beside the door and nginx (docs/benchmarks.md,
// "The stack's floor"). It does what any reverse proxy must and nothing else: parse the client's
// request, send it on one kept-alive connection to the child, parse the answer's head, and pass the
// answer back (a sized body whole, in one write; a chunked one piece by piece as it comes). No
// routing, admission, record, metrics, limits or timeouts: not a product, a yardstick.
//   kevlaya_bench_relay CHILD_PORT   (listens on a free loopback port and prints it)
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

auto token(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

enum class Relayed { done, failed, closed };  // closed: the child had closed the kept-alive connection

// One answer from `up` to `client`.
asio::awaitable<Relayed> relay_answer(tcp::socket& up, boost::beast::flat_buffer& ubuf, tcp::socket& client) {
  error_code ec;
  http::response_parser<http::empty_body> head;
  head.body_limit(std::numeric_limits<std::uint64_t>::max());  // (1.74 compares boost::none as a limit of 0)
  co_await http::async_read_header(up, ubuf, head, token(ec));
  if (ec == http::error::end_of_stream || ec == asio::error::connection_reset) co_return Relayed::closed;
  if (ec) co_return Relayed::failed;
  if (!head.chunked()) {  // a sized answer: read whole, written with its head in one write
    http::response_parser<http::string_body> whole{std::move(head)};
    co_await http::async_read(up, ubuf, whole, token(ec));
    if (ec) co_return Relayed::failed;
    co_await http::async_write(client, whole.get(), token(ec));
    co_return ec ? Relayed::failed : Relayed::done;
  }
  // A chunked answer (SSE): what one read brought goes on in one write, re-chunked by the serializer.
  http::response_parser<http::buffer_body> body{std::move(head)};
  http::response_serializer<http::buffer_body> out{body.get()};
  std::array<char, 16384> buf;
  for (;;) {
    std::size_t filled = 0;
    do {  // the first parse may wait for the socket; the rest only parse what that read buffered
      body.get().body().data = buf.data() + filled;
      body.get().body().size = buf.size() - filled;
      co_await http::async_read_some(up, ubuf, body, token(ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return Relayed::failed;
      filled = buf.size() - body.get().body().size;
    } while (!body.is_done() && ubuf.size() > 0 && filled < buf.size());
    // An empty piece goes without data: 1.74's serializer would write it as a chunk of size 0, the end.
    body.get().body().data = filled ? buf.data() : nullptr;
    body.get().body().size = filled;
    body.get().body().more = !body.is_done();
    if (!filled && body.get().body().more) continue;
    co_await http::async_write(client, out, token(ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return Relayed::failed;
    if (out.is_done()) co_return Relayed::done;
  }
}

asio::awaitable<bool> connect(tcp::socket& up, tcp::endpoint child) {
  error_code ec;
  up.close(ec);
  co_await up.async_connect(child, token(ec));
  if (!ec) up.set_option(tcp::no_delay(true), ec);
  co_return !ec;
}

asio::awaitable<void> session(tcp::socket client, tcp::endpoint child) {
  error_code ec;
  tcp::socket up(client.get_executor());
  if (!co_await connect(up, child)) co_return;
  client.set_option(tcp::no_delay(true), ec);
  boost::beast::flat_buffer cbuf, ubuf;
  for (;;) {
    http::request<http::string_body> req;
    co_await http::async_read(client, cbuf, req, token(ec));
    if (ec) co_return;
    const bool keep = req.keep_alive();
    req.keep_alive(true);  // the child's connection stays, whatever the client asked
    // A kept-alive connection the child closed meanwhile (llama-server closes it after a stream)
    // is opened again and the request sent once more: nothing of it was answered.
    Relayed got = Relayed::closed;
    for (int tries = 0; got == Relayed::closed && tries < 2; ++tries) {
      if (tries && !co_await connect(up, child)) co_return;
      ubuf.clear();
      co_await http::async_write(up, req, token(ec));
      got = ec ? Relayed::closed : co_await relay_answer(up, ubuf, client);
    }
    if (got != Relayed::done || !keep) co_return;
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, tcp::endpoint child) {
  for (;;) {
    error_code ec;
    tcp::socket s = co_await acceptor.async_accept(token(ec));
    if (ec) co_return;
    asio::co_spawn(acceptor.get_executor(), session(std::move(s), child), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kevlaya_bench_relay CHILD_PORT\n");
    return 2;
  }
  asio::io_context ioc(1);
  const tcp::endpoint child(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::atoi(argv[1])));
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::fprintf(stderr, "listening on http://127.0.0.1:%u\n", acceptor.local_endpoint().port());
  asio::signal_set stop(ioc, SIGTERM, SIGINT);
  stop.async_wait([&](error_code, int) { ioc.stop(); });
  asio::co_spawn(ioc, accept_loop(acceptor, child), asio::detached);
  ioc.run();
}
