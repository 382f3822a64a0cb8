#include "http_server.hpp"

#include <cctype>
#include <string_view>

#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace standin {
namespace {

namespace http = boost::beast::http;
using net::redirect_error;
using net::use_awaitable;

constexpr std::uint64_t kBodyLimit = 64ull * 1024 * 1024;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

void split_target(const std::string& target, HttpRequest& req) {
  const auto q = target.find('?');
  req.path = url_decode(target.substr(0, q));
  if (q == std::string::npos) return;
  std::string rest = target.substr(q + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    const auto amp = rest.find('&', pos);
    const std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    const auto eq = kv.find('=');
    if (!kv.empty()) req.query[url_decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1));
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
}

template <class Body>
void common_headers(http::response<Body>& res, bool keep_alive) {
  res.set(http::field::server, "llama.cpp");
  res.set(http::field::access_control_allow_origin, "");
  res.keep_alive(keep_alive);
}

}  // namespace

net::awaitable<void> Responder::send(int status, std::string body, std::string content_type,
                                     std::vector<std::pair<std::string, std::string>> headers) {
  answered_ = true;
  http::response<http::string_body> res{static_cast<http::status>(status), version_};
  common_headers(res, keep_alive_);
  for (const auto& [k, v] : headers) res.set(k, v);
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  boost::system::error_code ec;
  co_await http::async_write(socket_, res, redirect_error(use_awaitable, ec));
  if (ec) failed_ = true;
}

net::awaitable<bool> Responder::start_stream(std::string content_type) {
  answered_ = true;
  http::response<http::empty_body> res{http::status::ok, version_};
  common_headers(res, keep_alive_);
  res.set(http::field::content_type, content_type);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  boost::system::error_code ec;
  co_await http::async_write_header(socket_, sr, redirect_error(use_awaitable, ec));
  failed_ = failed_ || static_cast<bool>(ec);
  co_return !failed_;
}

net::awaitable<bool> Responder::write_chunk(const std::string& data) {
  if (failed_) co_return false;
  if (data.empty()) co_return true;  // an empty chunk would end the stream
  boost::system::error_code ec;
  co_await net::async_write(socket_, http::make_chunk(net::buffer(data)), redirect_error(use_awaitable, ec));
  failed_ = failed_ || static_cast<bool>(ec);
  co_return !failed_;
}

net::awaitable<void> Responder::end_stream() {
  if (failed_) co_return;
  boost::system::error_code ec;
  co_await net::async_write(socket_, http::make_chunk_last(), redirect_error(use_awaitable, ec));
  failed_ = failed_ || static_cast<bool>(ec);
}

std::optional<int> HttpServer::bind(const std::string& host, int port) {
  boost::system::error_code ec;
  const auto addr = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec || port < 0 || port > 65535) return std::nullopt;
  auto acc = std::make_unique<tcp::acceptor>(ioc_);
  const tcp::endpoint ep{addr, static_cast<unsigned short>(port)};
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return std::nullopt;
  const int bound = acc->local_endpoint().port();
  acceptor_ = std::move(acc);
  return bound;
}

void HttpServer::start() { net::co_spawn(ioc_, accept_loop(), net::detached); }

void HttpServer::stop_accepting() {
  if (!acceptor_) return;
  boost::system::error_code ec;
  acceptor_->close(ec);
}

net::awaitable<void> HttpServer::accept_loop() {
  while (acceptor_ && acceptor_->is_open()) {
    boost::system::error_code ec;
    tcp::socket sock = co_await acceptor_->async_accept(redirect_error(use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_->is_open()) co_return;
      continue;  // e.g. EMFILE: keep serving
    }
    sock.set_option(tcp::no_delay(true), ec);
    net::co_spawn(ioc_, serve(std::move(sock)), net::detached);
  }
}

net::awaitable<void> HttpServer::serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    boost::system::error_code ec;
    co_await http::async_read(socket, buffer, parser, redirect_error(use_awaitable, ec));
    if (ec) break;
    auto& raw = parser.get();
    HttpRequest req;
    req.method = std::string(raw.method_string());
    split_target(std::string(raw.target()), req);
    req.body = std::move(raw.body());
    req.authorization = std::string(raw[http::field::authorization]);
    req.x_api_key = std::string(raw["X-Api-Key"]);
    constexpr std::string_view kProxyHeader = "x-llama-server-proxy-header-";
    for (const auto& f : raw) {
      std::string name(f.name_string());
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (name.size() > kProxyHeader.size() && name.rfind(kProxyHeader, 0) == 0)
        req.proxy_headers[name.substr(kProxyHeader.size())] = std::string(f.value());
    }
    Responder responder(socket, raw.version(), raw.keep_alive());
    co_await handler_(req, responder);
    if (!responder.keep_alive()) break;
  }
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace standin
