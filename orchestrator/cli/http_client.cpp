#include "cli/http_client.hpp"

#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <nlohmann/json.hpp>

#include <regex>

#include "upstream/blocking.hpp"
#include "upstream/client.hpp"

namespace kevlaya::cli {

namespace asio = boost::asio;

namespace {

// The door as an upstream: one fresh connection per command, the key on every request.
upstream::Endpoint endpoint_of(const ClientOptions& o) {
  upstream::Endpoint ep(o.url.host, static_cast<std::uint16_t>(std::stoi(o.url.port)));
  ep.base_path = o.url.prefix;
  ep.api_key = o.api_key;
  return ep;
}

// A failed exchange, as the caller reads it: the door's deadline passed, or it could not be reached.
Error failed(const ClientOptions& o, const Error& e) {
  if (e.code == Errc::timeout)
    return make_error(Errc::timeout, "the door at " + o.url.text + " did not answer within " +
                                         std::to_string(o.timeout.count()) + " s");
  return make_error(Errc::unavailable, "cannot reach the door at " + o.url.text + ": " + e.message,
                    "is `kevlaya-orch serve` running there? (--url or KEVLAYA_URL)");
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
  if (std::stoi(u.port) > 65535)
    return make_error(Errc::bad_request, "not a door URL: '" + url + "' (port over 65535)");
  u.prefix = m[4].matched ? m[4].str() : "";
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  u.text = "http://" + std::string(m[2]) + ":" + u.port + u.prefix;
  return u;
}

Result<HttpAnswer> http_call(const ClientOptions& o, const std::string& method, const std::string& path,
                             const std::string& body) {
  upstream::Request req;
  req.method = method;
  req.target = path;
  if (method == "POST") req.body = body.empty() ? "{}" : body;
  req.timeout = o.timeout;  // the whole exchange
  auto got = upstream::run_blocking<upstream::Response>(
      [&](asio::any_io_executor ex) { return upstream::fetch(ex, endpoint_of(o), req); });
  if (!got) return failed(o, got.error());
  return HttpAnswer{got->status, std::move(got->body)};
}

Result<HttpAnswer> http_stream(const ClientOptions& o, const std::string& path,
                               const std::function<bool(std::string_view)>& on_data) {
  HttpAnswer head;
  upstream::StreamCallbacks cb;
  cb.on_head = [&head](int status, upstream::HeaderViews) {
    head.status = status;
    return true;
  };
  cb.on_chunk = [&head, &on_data](std::string_view bytes) {
    if (head.status / 100 == 2) return on_data(bytes);
    head.body.append(bytes);  // an error answer is returned whole
    return true;
  };
  upstream::StreamOptions opt;
  opt.first_byte_timeout = o.timeout;
  opt.idle_timeout = opt.deadline = std::chrono::hours(24 * 365);  // a quiet stream is fine: the door sends keep-alives
  upstream::Request req;
  req.target = path;
  auto got = upstream::run_blocking<upstream::StreamResult>([&](asio::any_io_executor ex) {
    return upstream::stream(ex, endpoint_of(o), req, cb, opt, nullptr);
  });
  if (!got && head.status == 0) return failed(o, got.error());
  return head;  // the door ended the stream (or broke it off after its head)
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
