#include "http/gate.hpp"

#include "common/loopback.hpp"
#include "common/strings.hpp"

#include <algorithm>
#include <cctype>

namespace kevlaya::http {
namespace {

namespace bhttp = boost::beast::http;

bool iequal(std::string_view a, std::string_view b) {
  return boost::beast::iequals({a.data(), a.size()}, {b.data(), b.size()});
}

bool istarts(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequal(s.substr(0, prefix.size()), prefix);
}

bool all_digits(std::string_view s) {
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return !s.empty();
}

// The name part of a Host value ("[::1]:8080" -> "[::1]", "kev.lan:80" -> "kev.lan"), or ""
// when what follows the name is not a port.
std::string_view host_name(std::string_view host) {
  const auto bracket = host.rfind(']');
  const auto colon = host.rfind(':');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket))
    return host;
  if (!all_digits(host.substr(colon + 1))) return {};
  return host.substr(0, colon);
}

// Every spelling of a loopback listen address: 127.0.0.0/8, ::1, and IPv4 loopback inside IPv6
// (::ffff:127.x.y.z, ::127.x.y.z), which Asio's is_loopback() takes for a public address.
bool loopback_name(std::string_view name) {
  if (iequal(name, "localhost") || iequal(name, "localhost.") || name == "[::1]") return true;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') return is_loopback_host(name);  // [::ffff:127.0.0.1] too
  if (name.substr(0, 4) != "127.") return false;  // 127.0.0.0/8, dotted quad only
  int dots = 0;
  for (char c : name) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3 && name.back() != '.';
}

// What `path` holds between `prefix` and `suffix` when it has both and something between them.
std::optional<std::string_view> between(std::string_view path, std::string_view prefix, std::string_view suffix = {}) {
  if (path.size() <= prefix.size() + suffix.size() || !path.starts_with(prefix) || !path.ends_with(suffix))
    return std::nullopt;
  return path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
}

// Ollama's API (ollama.cpp): its read-only GETs, its model POSTs; any other /api/* path is
// answered with an Ollama-shaped "not supported" (so GET and POST both reach it).
RouteMatch match_ollama(std::string_view path) {
  using V = bhttp::verb;
  const auto name = between(path, "/api/");
  if (!name) return {};
  if (*name == "tags" || *name == "ps" || *name == "version") return {Route::ollama, V::get, *name};
  if (*name == "show" || *name == "chat" || *name == "generate" || *name == "embed" || *name == "embeddings")
    return {Route::ollama, V::post, *name};
  return {Route::ollama, V::post, *name, nullptr, true};
}

// http(s)://NAME[:PORT] where NAME is a loopback name (localhost, 127.x.x.x, [::1]).
bool loopback_origin(std::string_view origin) {
  std::string_view rest;
  if (istarts(origin, "http://")) rest = origin.substr(7);
  else if (istarts(origin, "https://")) rest = origin.substr(8);
  else return false;
  const auto name = host_name(rest);
  return !name.empty() && name != "localhost." && loopback_name(name);
}

}  // namespace

GatePolicy GatePolicy::from(const std::string& listen_host, std::vector<std::string> allowed_hosts,
                            std::vector<std::string> allowed_origins) {
  GatePolicy p;
  const bool loopback = is_loopback_host(listen_host);
  p.check_host = loopback || !allowed_hosts.empty();
  p.allowed_hosts = std::move(allowed_hosts);
  p.allowed_origins = std::move(allowed_origins);
  p.any_origin = std::find(p.allowed_origins.begin(), p.allowed_origins.end(), kAnyOrigin) != p.allowed_origins.end();
  return p;
}

RouteMatch match_route(std::string_view path) {
  using V = bhttp::verb;
  if (path == "/health" || path == "/v1/health") return {Route::health, V::get, {}};
  if (path == "/livez") return {Route::health, V::get, "live"};  // liveness: never a load's 503
  if (path == "/readyz") return {Route::health, V::get, "ready"};  // which models serve without a switch
  if (const auto* api = find_api_route(path))
    return {Route::model_api, api->post ? V::post : V::get, {}, api};
  if (const auto rest = between(path, "/upstream/")) return {Route::upstream, V::post, *rest, nullptr, true};
  if (auto m = match_ollama(path); m.route != Route::none) return m;
  if (path == "/v1/models" || path == "/models") return {Route::models, V::get, {}};
  if (path == "/models/load") return {Route::router_load, V::post, {}};  // llama-server's router API
  if (path == "/models/unload") return {Route::router_unload, V::post, {}};
  if (const auto model = between(path, "/v1/models/")) return {Route::model_info, V::get, *model};
  if (path == "/status") return {Route::status, V::get, {}};
  if (path == "/") return {Route::root, V::get, {}};
  if (path == "/ui" || path.starts_with("/ui/")) return {Route::ui, V::get, path};
  if (const auto model = between(path, "/logs/")) return {Route::logs, V::get, *model};
  if (path == "/metrics") return {Route::metrics, V::get, {}};
  if (path == "/events") return {Route::events, V::get, {}};
  if (path == "/activity") return {Route::activity, V::get, {}};
  if (path == "/requests") return {Route::requests, V::get, {}};
  if (const auto id = between(path, "/admin/captures/")) return {Route::admin_capture, V::get, *id};
  if (const auto id = between(path, "/admin/requests/", "/cancel")) return {Route::admin_cancel, V::post, *id};
  if (path == "/admin/unload") return {Route::admin_unload, V::post, {}};
  if (path == "/admin/reload") return {Route::admin_reload, V::post, {}};
  if (const auto model = between(path, "/admin/unload/")) return {Route::admin_unload, V::post, *model};
  if (const auto model = between(path, "/admin/load/")) return {Route::admin_load, V::post, *model};
  if (const auto name = between(path, "/v1/pipelines/", "/runs")) return {Route::pipeline_runs, V::post, *name};
  if (const auto id = between(path, "/v1/runs/")) return {Route::run, V::get, *id};
  if (const auto id = between(path, "/slots/")) return {Route::slot_action, V::post, *id};  // GET /slots: apis.cpp
  if (path == "/cors-proxy") return {Route::cors_proxy, V::get, {}, nullptr, true};
  if (path == "/tools") return {Route::tools, V::get, {}, nullptr, true};  // the tools host (child_routes.cpp)
  return {};
}

std::string_view allow_of(const RouteMatch& m) {
  if (m.get_or_post) return "GET, POST, OPTIONS";
  return m.method == bhttp::verb::post ? "POST, OPTIONS" : "GET, OPTIONS";
}

bool is_admin(Route r) {
  return r == Route::admin_load || r == Route::admin_unload || r == Route::admin_reload || r == Route::logs ||
         r == Route::admin_cancel || r == Route::admin_capture || r == Route::router_load ||
         r == Route::router_unload || r == Route::slot_action;
}

namespace {

// The first segment of `path` as a server that decodes and normalises it would route it, lower-case.
std::string first_segment(std::string_view path) {
  const std::string decoded = url_decode(path);  // ('+' as a space: no admin name has either)
  std::vector<std::string> segs;
  for (std::size_t at = 0; at <= decoded.size();) {
    const auto end = std::min(decoded.find('/', at), decoded.size());
    const std::string seg = decoded.substr(at, end - at);
    if (seg == "..") {
      if (!segs.empty()) segs.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segs.push_back(seg);
    }
    at = end + 1;
  }
  return segs.empty() ? std::string() : ascii_lower(segs.front());
}

}  // namespace

bool is_admin(const RouteMatch& m, bhttp::verb method) {
  if (is_admin(m.route)) return true;
  if (m.route == Route::tools) return method != bhttp::verb::get;  // a call may write files or run commands
  if (m.route != Route::upstream || method == bhttp::verb::get) return false;
  const auto slash = m.arg.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string seg = first_segment(m.arg.substr(slash + 1));
  return seg == "lora-adapters" || seg == "slots" || seg == "props" || seg == "models";
}

std::optional<Error> check_host(const GatePolicy& p, const bhttp::fields& f) {
  auto it = f.find(bhttp::field::host);
  if (it == f.end() || it->value().empty())
    return make_error(Errc::bad_request, "missing Host header (HTTP/1.1 requires exactly one)");
  if (f.count(bhttp::field::host) > 1)
    return make_error(Errc::bad_request, "more than one Host header (HTTP/1.1 requires exactly one)");
  if (!p.check_host) return std::nullopt;
  const std::string_view host(it->value().data(), it->value().size());
  const auto name = host_name(host);
  if (!name.empty()) {
    if (loopback_name(name)) return std::nullopt;
    for (const auto& h : p.allowed_hosts)
      if (iequal(name, h)) return std::nullopt;
  }
  // The value is not echoed: it is whatever the client sent.
  return make_error(Errc::forbidden, "this door serves only loopback host names (Host: localhost, "
                                     "127.0.0.1, [::1]) and those listed in allowed_hosts",
                    "add the name to allowed_hosts in kevlaya.yaml (docs/security.md)");
}

OriginVerdict check_origin(const GatePolicy& p, std::string_view origin, std::string_view host) {
  if (origin.empty()) return OriginVerdict::none;
  if (p.any_origin) return OriginVerdict::allowed;
  for (const auto& o : p.allowed_origins)
    if (iequal(origin, o) || (o == kLoopbackOrigins && loopback_origin(origin))) return OriginVerdict::allowed;
  constexpr std::string_view kHttp = "http://";
  if (istarts(origin, kHttp) && iequal(origin.substr(kHttp.size()), host)) return OriginVerdict::same;
  return OriginVerdict::refused;
}

OriginVerdict check_origin(const GatePolicy& p, const bhttp::fields& f) {
  if (f.count(bhttp::field::origin) > 1) return OriginVerdict::refused;
  const auto origin = f[bhttp::field::origin], host = f[bhttp::field::host];
  return check_origin(p, {origin.data(), origin.size()}, {host.data(), host.size()});
}

bool is_json_content_type(std::string_view ct) {
  const auto semi = ct.find(';');
  auto type = ct.substr(0, semi);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  if (iequal(type, "application/json")) return true;
  return istarts(type, "application/") && type.size() > 17 &&
         iequal(type.substr(type.size() - 5), "+json");
}

Error origin_refused() {  // the origin is not echoed: client-controlled
  return make_error(Errc::forbidden, "requests from web pages are refused unless their origin is "
                                     "listed in cors.allowed_origins",
                    "add the page's origin (e.g. http://localhost:3000) to cors.allowed_origins "
                    "in kevlaya.yaml (docs/security.md)");
}

Error not_json() {
  return make_error(Errc::unsupported_media, "a request with browser headers (Origin, Sec-Fetch-*) must send its "
                                             "JSON body with 'Content-Type: application/json'");
}

}  // namespace kevlaya::http
