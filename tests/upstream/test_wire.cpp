// upstream::HeadWriter / status_line / write_ready lay out and send a message; Beast's serializer is the reference.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <array>
#include <cstring>
#include <initializer_list>
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

// Sets the same fields, in order, on a Beast message (the reference) and on a HeadWriter.
template <class Message>
void set_both(Message& m, kevlaya::upstream::HeadWriter& h,
              std::initializer_list<std::pair<const char*, const char*>> fields) {
  for (const auto& [k, v] : fields) m.set(k, v), h.set(k, v);
}

}  // namespace

TEST_CASE("HeadWriter and status_line write the head Beast's serializer writes for the same fields", "[upstream]") {
  using kevlaya::upstream::HeadWriter;
  SECTION("responses: status lines, a replaced field, Connection and Content-Length as Beast adds them") {
    for (const auto& [status, version, keep] : {std::tuple{200, 11, true}, std::tuple{404, 11, false},
                                                std::tuple{503, 10, true}, std::tuple{429, 10, false}}) {
      bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), static_cast<unsigned>(version)};
      HeadWriter h;  // a second set of a name replaces the first
      set_both(res, h, {{"Server", "kevlaya-orch"}, {"Content-Type", "application/json"},
                        {"X-Kevlaya-Model", "kev"}, {"x-kevlaya-model", "laya"}});
      res.keep_alive(keep);
      res.body() = "{}";
      res.prepare_payload();
      h.keep_alive(static_cast<unsigned>(version), keep);
      h.set("Content-Length", "2");
      CAPTURE(status, version, keep);
      // Beast keeps the first spelling of a replaced name only when it replaces in place; compare
      // without case, the bytes otherwise exact.
      auto mine = h.text(kevlaya::upstream::status_line(static_cast<unsigned>(version), status)) + "{}";
      auto beast = beast_bytes(res);
      std::transform(mine.begin(), mine.end(), mine.begin(), [](unsigned char c) { return std::tolower(c); });
      std::transform(beast.begin(), beast.end(), beast.begin(), [](unsigned char c) { return std::tolower(c); });
      CHECK(mine == beast);
    }
  }
  SECTION("a request: its line, the fields in order, the length") {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions", 11};
    HeadWriter h;
    set_both(req, h, {{"Host", "127.0.0.1:40000"}, {"User-Agent", "kevlaya-orch"},
                      {"Content-Type", "application/json"}, {"Authorization", "Bearer k"}});
    req.keep_alive(false);
    req.body() = R"({"model":"kev"})";
    req.prepare_payload();
    h.keep_alive(11, false);
    h.set("Content-Length", "15");
    CHECK(h.text("POST /v1/chat/completions HTTP/1.1") + req.body() == beast_bytes(req));
  }
  SECTION("a GET without a body, closing: no length") {
    bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/health", 11};
    HeadWriter h;
    set_both(req, h, {{"Host", "h"}});
    req.keep_alive(false);
    req.prepare_payload();
    h.keep_alive(11, false);
    CHECK(h.text("GET /health HTTP/1.1") == beast_bytes(req));
  }
  SECTION("a 204: no length (RFC 9110 8.6; Beast 1.74's prepare_payload writes Content-Length: 0)") {
    HeadWriter h;
    h.set("Server", "kevlaya-orch");
    h.set("Allow", "GET");
    CHECK(h.text(kevlaya::upstream::status_line(11, 204)) ==
          "HTTP/1.1 204 No Content\r\nServer: kevlaya-orch\r\nAllow: GET\r\n\r\n");
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
    res.body() = std::string(size, 'x');
    kevlaya::upstream::HeadWriter h;
    h.set("Content-Type", "text/plain");
    const std::string length = std::to_string(size);
    h.set("Content-Length", length);
    const auto head = h.text(kevlaya::upstream::status_line(11, 200));
    boost::system::error_code ec;
    const std::array<asio::const_buffer, 2> bytes{asio::buffer(head), asio::buffer(res.body())};
    const auto rest = kevlaya::upstream::write_ready(a, bytes, ec);
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
