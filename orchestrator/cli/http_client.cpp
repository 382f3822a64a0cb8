#include "cli/http_client.hpp"

#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <regex>

namespace kevlaya::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

Error unreachable(const ClientOptions& o, const boost::system::error_code& ec) {
  return make_error(Errc::unavailable, "cannot reach the door at " + o.url.text + ": " + ec.message(),
                    "is `kevlaya-orch serve` running there? (--url or KEVLAYA_URL)");
}

Error timed_out(const ClientOptions& o) {
  return make_error(Errc::timeout, "the door at " + o.url.text + " did not answer within " +
                                       std::to_string(o.timeout.count()) + " s");
}

bhttp::request<bhttp::string_body> make_request(const ClientOptions& o, bhttp::verb method, const std::string& path,
                                                const std::string& body) {
  bhttp::request<bhttp::string_body> req(method, o.url.prefix + path, 11);
  req.set(bhttp::field::host, o.url.host + ":" + o.url.port);
  req.set(bhttp::field::user_agent, "kevlaya-orch");
  if (!o.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + o.api_key);
  if (method == bhttp::verb::post) {
    req.set(bhttp::field::content_type, "application/json");
    req.body() = body.empty() ? "{}" : body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  return req;
}

// Connects within the timeout; the error is the last connect attempt's.
asio::awaitable<boost::system::error_code> connect(beast::tcp_stream& s, const ClientOptions& o) {
  boost::system::error_code ec;
  tcp::resolver resolver(s.get_executor());
  auto endpoints = co_await resolver.async_resolve(o.url.host, o.url.port, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return ec;
  s.expires_after(o.timeout);
  co_await s.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  co_return ec;
}

// A failed exchange, as the caller reads it: the door's deadline passed, or it could not be reached.
Error failed(const ClientOptions& o, const boost::system::error_code& ec) {
  return ec == beast::error::timeout ? timed_out(o) : unreachable(o, ec);
}

// Connects and sends one request; the error when either step fails.
asio::awaitable<std::optional<Error>> send(beast::tcp_stream& s, const ClientOptions& o, bhttp::verb method,
                                           const std::string& path, const std::string& body) {
  if (auto ec = co_await connect(s, o)) co_return unreachable(o, ec);
  boost::system::error_code ec;
  auto req = make_request(o, method, path, body);
  co_await bhttp::async_write(s, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(o, ec);
  co_return std::nullopt;
}

}  // namespace

Result<DoorUrl> parse_door_url(const std::string& url) {
  static const std::regex re(R"(^(?:(https?)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+)(?::([0-9]{1,5}))?(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, re))
    return make_error(Errc::bad_request, "not a door URL: '" + url + "' (expected http://HOST:PORT)");
  if (m[1] == "https")
    return make_error(Errc::bad_request, "the door speaks plain HTTP; use http:// (or a TLS proxy's own client)");
  DoorUrl u;
  u.host = m[2];
  if (u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  u.port = m[3].matched ? m[3].str() : "80";
  u.prefix = m[4].matched ? m[4].str() : "";
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  u.text = "http://" + std::string(m[2]) + ":" + u.port + u.prefix;
  return u;
}

Result<HttpAnswer> http_call(const ClientOptions& o, const std::string& method, const std::string& path,
                             const std::string& body) {
  asio::io_context ioc;
  std::optional<Result<HttpAnswer>> out;
  auto task = [&]() -> asio::awaitable<void> {
    beast::tcp_stream s(ioc);
    const auto verb = method == "POST" ? bhttp::verb::post : bhttp::verb::get;
    if (auto e = co_await send(s, o, verb, path, body)) {
      out.emplace(std::move(*e));
      co_return;
    }
    boost::system::error_code ec;
    beast::flat_buffer buf;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    co_await bhttp::async_read(s, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      out.emplace(failed(o, ec));
      co_return;
    }
    out.emplace(HttpAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()});
  };
  asio::co_spawn(ioc, task, asio::detached);
  ioc.run_for(o.timeout + std::chrono::seconds(1));  // the stream's own expiry ends the task first
  if (!out) return timed_out(o);
  return std::move(*out);
}

Result<HttpAnswer> http_stream(const ClientOptions& o, const std::string& path,
                               const std::function<bool(std::string_view)>& on_data) {
  asio::io_context ioc;
  std::optional<Result<HttpAnswer>> out;
  auto task = [&]() -> asio::awaitable<void> {
    beast::tcp_stream s(ioc);
    if (auto e = co_await send(s, o, bhttp::verb::get, path, "")) {
      out.emplace(std::move(*e));
      co_return;
    }
    boost::system::error_code ec;
    beast::flat_buffer buf;
    bhttp::response_parser<bhttp::buffer_body> parser;
    parser.body_limit(boost::none);
    co_await bhttp::async_read_header(s, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      out.emplace(failed(o, ec));
      co_return;
    }
    HttpAnswer head{static_cast<int>(parser.get().result_int()), ""};
    s.expires_never();  // a quiet stream is fine: the door sends keep-alive comments
    std::array<char, 8192> chunk{};
    const bool ok = head.status / 100 == 2;
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      // read_some: hand each piece on as it arrives (read would wait for a full buffer)
      co_await bhttp::async_read_some(s, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec && ec != bhttp::error::need_buffer) break;
      const std::string_view data(chunk.data(), chunk.size() - parser.get().body().size);
      if (!ok) head.body.append(data);
      else if (!data.empty() && !on_data(data)) break;
    }
    out.emplace(std::move(head));
  };
  asio::co_spawn(ioc, task, asio::detached);
  ioc.run();
  if (!out) return timed_out(o);
  return std::move(*out);
}

std::string error_text(const HttpAnswer& a) {
  const auto j = nlohmann::json::parse(a.body, nullptr, false);
  if (!j.is_object() || !j.contains("error")) return "HTTP " + std::to_string(a.status) + ": " + a.body;
  const auto& e = j["error"];
  if (e.is_string()) return e.get<std::string>();
  std::string s = e.value("message", std::string("HTTP ") + std::to_string(a.status));
  if (e.contains("hint") && e["hint"].is_string()) s += " (" + e["hint"].get<std::string>() + ")";
  if (e.contains("detail") && e["detail"].is_array())
    for (const auto& d : e["detail"]) s += "\n  " + (d.is_string() ? d.get<std::string>() : d.dump());
  return s;
}

}  // namespace kevlaya::cli
