// GET/POST /tools: llama-server's tools API (its built-in tools and MCP servers), answered by the
// tools host the door runs (supervisor/tools_host.hpp). The door has judged the caller already
// (key, origin; a POST needs an admin key where admin_api_keys are set); the request's X-Tool-*
// headers go with it, and the host's answer is relayed as it is, status and body.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include "http/detail.hpp"

namespace kevlaya::http {

namespace {

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

// The host's answer, with its content type (JSON, or a tool's text).
Reply relayed(upstream::Response&& r) {
  Reply out;
  out.status = r.status;
  const auto ct = r.header("Content-Type");
  if (!ct.empty()) out.content_type = ct;
  out.body = std::move(r.body);
  return out;
}

}  // namespace

asio::awaitable<void> tools_route(Door& d, Request& req, Connection& c) {
  if (!d.tools) {
    co_await c.send(tools_off_reply());
    co_return;
  }
  const auto ep = d.tools->endpoint();
  if (!ep) {
    co_await c.send(tools_down_reply(d.tools->last_error()));
    co_return;
  }
  upstream::Request up;
  up.method = req.method() == bhttp::verb::post ? "POST" : "GET";
  up.target = std::string(req.target().data(), req.target().size());
  up.body = req.body();
  up.timeout = d.opt.upstream_deadline;  // a tool may run for long; llama-server bounds its own calls
  // llama-server's per-call tool settings (X-Tool-Cwd: the folder a built-in tool works in).
  constexpr std::string_view kToolHeader = "x-tool-";
  for (const auto& h : req) {
    const std::string_view name(h.name_string().data(), h.name_string().size());
    if (name.size() > kToolHeader.size() &&
        beast::iequals(beast::string_view(name.data(), kToolHeader.size()),
                       beast::string_view(kToolHeader.data(), kToolHeader.size())))
      up.headers.emplace_back(std::string(name), std::string(h.value().data(), h.value().size()));
  }
  auto r = co_await upstream::fetch(d.strand, *ep, std::move(up));
  if (!r) {
    co_await c.send(error_reply(r.error()));
    co_return;
  }
  co_await c.send(relayed(std::move(r.value())));
}

}  // namespace kevlaya::http
