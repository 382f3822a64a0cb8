// upstream::flat_head / flat_buffers / write_ready lay out and send a message; Beast's serializer is the reference.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstring>
#include <string>
#include <thread>
#include <tuple>

#include "upstream/wire.hpp"

namespace bhttp = boost::beast::http;
namespace asio = boost::asio;

namespace {

// What Beast's own serializer writes for `msg`.
template <bool isRequest>
std::string beast_bytes(bhttp::message<isRequest, bhttp::string_body>& msg) {
  bhttp::serializer<isRequest, bhttp::string_body> sr{msg};
  std::string out;
  boost::system::error_code ec;
  while (!sr.is_done()) {
    sr.next(ec, [&](boost::system::error_code&, const auto& bufs) {
      out += boost::beast::buffers_to_string(bufs);
      sr.consume(boost::asio::buffer_size(bufs));
    });
    REQUIRE_FALSE(ec);
  }
  return out;
}

template <bool isRequest>
std::string flat_bytes(const bhttp::message<isRequest, bhttp::string_body>& msg) {
  return kevlaya::upstream::flat_head(msg.base()) + msg.body();
}

}  // namespace

TEST_CASE("flat_head writes the bytes Beast's serializer writes", "[upstream]") {
  SECTION("a proxied POST with a body") {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions", 11};
    req.set(bhttp::field::host, "127.0.0.1:40000");
    req.set(bhttp::field::content_type, "application/json");
    req.set("X-Custom", "a value");
    req.keep_alive(true);
    req.body() = R"({"model":"kev"})";
    req.prepare_payload();
    CHECK(flat_bytes(req) == beast_bytes(req));
  }
  SECTION("a GET without a body, closing") {
    bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/health", 11};
    req.set(bhttp::field::host, "h");
    req.keep_alive(false);
    req.prepare_payload();
    CHECK(flat_bytes(req) == beast_bytes(req));
  }
  SECTION("responses: 200, 404, 204 and an HTTP/1.0 keep-alive") {
    for (const auto& [status, version, body] : {std::tuple{200, 11, std::string(R"({"ok":true})")},
                                                std::tuple{404, 11, std::string("not found")},
                                                std::tuple{204, 11, std::string()},
                                                std::tuple{503, 10, std::string("busy")}}) {
      bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), static_cast<unsigned>(version)};
      res.set(bhttp::field::server, "kevlaya-orch");
      res.set(bhttp::field::content_type, "application/json");
      res.keep_alive(version == 10);
      res.body() = body;
      res.prepare_payload();
      CAPTURE(status, version);
      CHECK(flat_bytes(res) == beast_bytes(res));
      CHECK(flat_bytes(res).rfind("HTTP/1." + std::to_string(version % 10) + " " + std::to_string(status) + " ", 0) == 0);
    }
  }
}

// write_ready writes what the socket takes at once; the rest (here: more than a socket buffer holds
// while nobody reads) goes out with an asynchronous write, and the peer parses one whole message.
TEST_CASE("write_ready writes what the socket takes now, the rest follows, and a Beast parser reads one message",
          "[upstream]") {
  asio::io_context ioc;
  asio::ip::tcp::acceptor acc(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket a(ioc), b(ioc);
  a.connect(acc.local_endpoint());
  acc.accept(b);
  for (const std::size_t size : {std::size_t{70}, std::size_t{16} << 20}) {
    CAPTURE(size);
    bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/plain");
    res.body() = std::string(size, 'x');
    res.prepare_payload();
    const auto head = kevlaya::upstream::flat_head(res.base());
    boost::system::error_code ec;
    const auto rest = kevlaya::upstream::write_ready(a, kevlaya::upstream::flat_buffers(head, res), ec);
    REQUIRE_FALSE(ec);
    const std::size_t left = boost::beast::buffer_bytes(rest);
    if (size == 70) CHECK(left == 0);  // a small message goes at once
    else CHECK((left > 0 && left < head.size() + size));  // a part now, the rest when the peer reads
    boost::system::error_code wec;
    std::size_t written = 0;
    if (left > 0)
      asio::async_write(a, rest, [&](boost::system::error_code e, std::size_t n) { wec = e, written = n; });
    bhttp::response<bhttp::string_body> got;
    boost::beast::flat_buffer buf;
    got.body().reserve(size);
    std::thread reader([&] { bhttp::read(b, buf, got); });
    ioc.restart();
    ioc.run();
    reader.join();
    CHECK_FALSE(wec);
    CHECK(written == left);
    CHECK(got.result_int() == 200);
    CHECK(got.body() == res.body());
    CHECK(got[bhttp::field::content_type] == "text/plain");
  }
}

namespace {

// Appends `text` to `buf` (what a read would have put there).
void arrive(boost::beast::flat_buffer& buf, const std::string& text) {
  auto b = buf.prepare(text.size());
  std::memcpy(b.data(), text.data(), text.size());
  buf.commit(text.size());
}

}  // namespace

TEST_CASE("parse_buffered reads what is buffered, stops for more without losing bytes, and reports limits", "[upstream]") {
  using kevlaya::upstream::parse_buffered;
  boost::system::error_code ec;
  SECTION("a request body that came with its header, then its rest") {
    bhttp::request_parser<bhttp::string_body> p;
    boost::beast::flat_buffer buf;
    arrive(buf, "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello");
    parse_buffered(p, buf, ec);  // the header, then the first body bytes
    CHECK_FALSE(ec);
    CHECK_FALSE(p.is_done());
    CHECK(buf.size() == 0);
    arrive(buf, " world");
    parse_buffered(p, buf, ec);
    CHECK_FALSE(ec);
    REQUIRE(p.is_done());
    CHECK(p.get().body() == "hello world");
  }
  SECTION("a chunked answer split inside a chunk header, and bytes past its end left in the buffer") {
    bhttp::response_parser<bhttp::string_body> p;
    boost::beast::flat_buffer buf;
    arrive(buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
    parse_buffered(p, buf, ec);
    CHECK_FALSE(ec);
    CHECK_FALSE(p.is_done());
    arrive(buf, "cde\r\n");
    parse_buffered(p, buf, ec);
    arrive(buf, "0");  // a chunk header cut short: needs more, keeps the byte
    parse_buffered(p, buf, ec);
    CHECK_FALSE(ec);
    CHECK(boost::beast::buffers_to_string(buf.data()).back() == '0');  // kept for the next read
    arrive(buf, "\r\n\r\nNEXT");
    parse_buffered(p, buf, ec);
    CHECK_FALSE(ec);
    REQUIRE(p.is_done());
    CHECK(p.get().body() == "abcde");
    CHECK(boost::beast::buffers_to_string(buf.data()) == "NEXT");
  }
  SECTION("a body over the limit is the parser's error, as a read would report it") {
    bhttp::request_parser<bhttp::string_body> p;
    p.body_limit(4);
    boost::beast::flat_buffer buf;
    arrive(buf, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789");
    parse_buffered(p, buf, ec);
    CHECK(ec == bhttp::error::body_limit);
  }
}
