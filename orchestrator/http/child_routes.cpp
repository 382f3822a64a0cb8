// llama-server routes the door judges itself before forwarding them: to a model's child through
// proxy_call (queue, lease, relay), slot actions (POST /slots/{id}) and the CORS proxy
// (/cors-proxy); to the tools host (supervisor/tools_host.hpp), GET/POST /tools, once the door has
// judged the caller (key, origin; a POST needs an admin key where admin_api_keys are set). The
// pure checks are in child_routes.hpp.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include "http/child_routes.hpp"

#include "common/bounded_json.hpp"
#include "common/bytes.hpp"
#include "config/backend.hpp"
#include "http/apis.hpp"
#include "http/detail.hpp"
#include "warm/slot_cache.hpp"

namespace kevlaya::http {

using nlohmann::json;

bool valid_slot_id(std::string_view id) {
  if (id.empty() || id.size() > 9) return false;
  for (const char ch : id)
    if (ch < '0' || ch > '9') return false;
  return true;
}

bool safe_slot_filename(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name.find('/') == std::string_view::npos &&
         name.find('\\') == std::string_view::npos && name.find("..") == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

bool enables_cors_proxy(const std::vector<std::string>& args) {
  bool on = false;
  for (const auto& a : args) {
    if (a == "--ui-mcp-proxy" || a == "--webui-mcp-proxy") on = true;
    if (a == "--no-ui-mcp-proxy" || a == "--no-webui-mcp-proxy") on = false;
  }
  return on;
}

namespace {

// llama-server's error body: {"error":{"code","message","type"}} (plus the door's "src").
json llama_error_json(int code, const std::string& message, std::string_view type) {
  return {{"error", {{"code", code}, {"message", message}, {"type", type}, {"src", "kevlaya"}}}};
}

// The request's headers whose names start with `prefix` (case-insensitive), names and values as sent.
upstream::Headers headers_with_prefix(const Request& req, std::string_view prefix) {
  upstream::Headers out;
  for (const auto& h : req) {
    const std::string_view name(h.name_string().data(), h.name_string().size());
    if (name.size() > prefix.size() && beast::iequals(beast::string_view(name.data(), prefix.size()),
                                                      beast::string_view(prefix.data(), prefix.size())))
      out.emplace_back(std::string(name), std::string(h.value().data(), h.value().size()));
  }
  return out;
}

Reply llama_error(int code, const std::string& message, std::string_view type) {
  Reply r;
  r.status = code;
  r.body = dump_json(llama_error_json(code, message, type));
  return r;
}

Reply invalid(const std::string& message) { return llama_error(400, message, "invalid_request_error"); }

// The body's `model` (absent or null = none), or a refusal for another type.
std::optional<Reply> body_model(const json& body, std::string& model) {
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return invalid("\"model\" must be a string");
  model = it->get<std::string>();
  return std::nullopt;
}

// Fills `call` for POST /slots/{id}, or returns the refusal: a bad id, action, body or file name
// (400, llama-server's shape), an unknown model (the door's 404), or a model whose child has no
// slot folder (501, as llama-server answers without --slot-save-path, saying how to give it one).
std::optional<Reply> slot_call(const Door& d, const Request& req, std::string_view id, ProxyCall& call) {
  if (!valid_slot_id(id)) return invalid("Invalid slot ID");
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view query = query_of(target);
  const std::string action = query_param(query, "action");
  if (action != "save" && action != "restore" && action != "erase") return invalid("Invalid action");
  json body = json::object();
  if (!req.body().empty()) {
    auto parsed = parse_json_bounded(req.body());
    if (!parsed || !parsed->is_object()) return invalid("the body must be a JSON object");
    body = std::move(parsed.value());
  }
  std::string model = query_param(query, "model");
  if (model.empty())
    if (auto refused = body_model(body, model)) return refused;
  const auto f = body.find("filename");
  if (f != body.end() && !(f->is_string() && safe_slot_filename(f->get_ref<const std::string&>())))
    return invalid("Invalid filename");
  if (action != "erase" && f == body.end()) return invalid("\"filename\" is required for action " + action);
  auto made = raw_call(d, model);
  if (!made) return error_reply(made.error());
  call = std::move(*made);
  if (!warm::slot_save_dir(*call.prof, call.cfg->orch.state_dir))
    return llama_error(501,
                       "model '" + call.profile() + "' has no slot folder: set slot_cache.enabled: true in its "
                       "profile (the door then runs its child with --slot-save-path " +
                           warm::slot_dir(call.cfg->orch.state_dir, call.profile()).string() + ")",
                       "not_supported_error");
  call.target = "/slots/" + std::string(id) + "?action=" + action;
  call.body_text = req.body().empty() ? std::string() : dump_json(body);  // what was checked, re-serialized
  return std::nullopt;
}

// Fills `call` for /cors-proxy, or returns the refusal: an unknown model, or a profile that does
// not turn the proxy on (403, as llama-server answers when its proxy is off, with how to turn it on).
std::optional<Reply> cors_call(const Door& d, const Request& req, ProxyCall& call) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string model = query_param(query_of(target), "model");
  auto made = raw_call(d, model);
  if (!made) return error_reply(made.error());
  call = std::move(*made);
  const bool get = req.method() == bhttp::verb::get;
  if (!config::backend_of(*call.prof).llama_server || !enables_cors_proxy(call.prof->extra_args))
    return error_reply(make_error(Errc::forbidden,
                                  std::string(get ? "GET" : "POST") + " /cors-proxy: model '" +
                                      call.profile() + "' does not run llama-server's CORS proxy",
                                  "add --ui-mcp-proxy to the profile's extra_args (any caller with a key can "
                                  "then make its child fetch any URL: docs/security.md)"));
  call.relay_headers = true;
  call.method = get ? "GET" : "POST";
  call.target = std::string(target);
  // llama-server sends on to the target only the headers named x-llama-server-proxy-header-<name>.
  call.headers = headers_with_prefix(req, "x-llama-server-proxy-header-");
  return std::nullopt;
}

Reply tools_off_reply() {
  return error_reply(make_error(Errc::not_found, "no route for /tools: tools are off",
                                "set tools.builtin (e.g. all) or tools.mcp_servers in kevlaya.yaml "
                                "(docs/http.md, \"Tools\")"));
}

Reply tools_down_reply(const std::string& why) {
  Error e = make_error(Errc::unavailable, why.empty() ? "the tools host is not serving" : why,
                       "see log_dir/@tools.log; the door restarts it by itself");
  e.retry_after_s = 1;
  return error_reply(e);
}

// The tools host's answer as it is, with its content type (JSON, or a tool's text).
Reply relayed(upstream::Response&& r) {
  Reply out;
  out.status = r.status;
  const auto ct = r.header("Content-Type");
  if (!ct.empty()) out.content_type = ct;
  out.body = std::move(r.body);
  return out;
}

// The refusal when there is one, else the call, through proxy_call.
asio::awaitable<void> refuse_or_proxy(Door& d, Request& req, Connection& c, std::optional<Reply> refused,
                                      ProxyCall call, Clock::time_point t0) {
  if (refused) co_return co_await c.reply(std::move(*refused));
  co_await proxy_call(d, req, c, std::move(call), t0);
}

}  // namespace

asio::awaitable<void> slot_action(Door& d, Request& req, Connection& c, const RouteMatch& m) {
  const auto t0 = Clock::now();
  ProxyCall call;
  auto refused = slot_call(d, req, m.arg, call);
  co_await refuse_or_proxy(d, req, c, std::move(refused), std::move(call), t0);
}

asio::awaitable<void> cors_proxy(Door& d, Request& req, Connection& c) {
  const auto t0 = Clock::now();
  ProxyCall call;
  auto refused = cors_call(d, req, call);
  co_await refuse_or_proxy(d, req, c, std::move(refused), std::move(call), t0);
}

asio::awaitable<void> tools_route(Door& d, Request& req, Connection& c) {
  if (!d.tools) co_return co_await c.reply(tools_off_reply());
  const auto ep = d.tools->endpoint();
  if (!ep) co_return co_await c.reply(tools_down_reply(d.tools->last_error()));
  upstream::Request up;
  up.method = req.method() == bhttp::verb::post ? "POST" : "GET";
  up.target = std::string(req.target().data(), req.target().size());
  up.body = req.body();
  up.timeout = d.opt.upstream_deadline;  // a tool may run for long; llama-server bounds its own calls
  up.headers = headers_with_prefix(req, "x-tool-");  // llama-server's per-call settings (X-Tool-Cwd)
  auto r = co_await upstream::fetch(d.strand, *ep, std::move(up));
  if (!r) co_return co_await c.reply(error_reply(r.error()));
  co_await c.send(relayed(std::move(r.value())));
}

}  // namespace kevlaya::http
