// Who may talk to the door, decided on the parsed header before any route runs (docs/security.md):
// exactly one Host, naming loopback (or an allowed host) when the door listens on loopback, so a
// DNS-rebinding page cannot read answers; an Origin only when allowed (a browser page elsewhere
// cannot drive the door); CORS preflights answered exactly; POST bodies typed as JSON (a
// cross-site "simple" text/plain form post is refused). Pure and cheap: no regex, no allocation.
// Also the route table, so that an unknown method on a known path is a 405 with Allow.
#pragma once
#include <boost/beast/http.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "http/apis.hpp"

namespace kevlaya::http {

// The cors.allowed_origins keyword for any loopback origin on any port (llama-server's
// `--cors-origins localhost`): http(s)://localhost, 127.x.x.x or [::1].
inline constexpr std::string_view kLoopbackOrigins = "localhost";
// The cors.allowed_origins keyword for every origin (llama-server without --cors-origins).
inline constexpr std::string_view kAnyOrigin = "*";

struct GatePolicy {
  bool check_host = true;                    // only loopback names and allowed_hosts are served
  std::vector<std::string> allowed_hosts;    // lower-case, no port
  std::vector<std::string> allowed_origins;  // lower-case "scheme://host[:port]"
  bool any_origin = false;                   // "*" is listed: preflights answered as llama-server's

  // check_host is on when `listen_host` is a loopback address or `allowed_hosts` is non-empty.
  static GatePolicy from(const std::string& listen_host, std::vector<std::string> allowed_hosts,
                         std::vector<std::string> allowed_origins);
};

// The door's routes. `method` is the one method each answers (besides OPTIONS).
// model_api: a row of the pass-through table (apis.hpp); upstream: /upstream/{model}/{path},
// GET or POST; ollama: /api/* (ollama.hpp).
// ui: /ui and /ui/{asset} (open, like /health); root: GET / (a browser is sent to /ui, anything
// else gets the 404 it always got); logs: /logs/{model}.
// slot_action: POST /slots/{id} (llama-server's save/restore/erase, forwarded to a model's child);
// cors_proxy: GET or POST /cors-proxy (llama-server's --ui-mcp-proxy, when the profile enables it).
enum class Route { none, health, model_api, upstream, ollama, models, model_info, status, metrics, events,
                   admin_load, admin_unload, admin_reload, pipeline_runs, run, ui, root, logs, activity,
                   requests, admin_cancel, admin_capture, router_load, router_unload, slot_action, cors_proxy,
                   tools };
struct RouteMatch {
  Route route = Route::none;
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string_view arg;  // model of /admin/load/{m}, /admin/unload/{m}, /v1/models/{m} and /logs/{m}, pipeline of
                         // /v1/pipelines/{n}/runs, run id, "{model}/{path}" of /upstream/, slot id of /slots/{id}
  const ApiRoute* api = nullptr;  // model_api only
  bool get_or_post = false;       // upstream: either method
};
RouteMatch match_route(std::string_view path);
// The Allow header value of a route ("GET, OPTIONS" / "POST, OPTIONS").
std::string_view allow_of(const RouteMatch& m);
// The routes admin_api_keys guard: /admin/*, /logs, the router API's /models/load and /models/unload,
// and slot actions (they write and read files in the child's slot folder, as under /upstream/).
bool is_admin(Route r);
// Also guarded: a POST under /upstream/{model}/ to a child's state-changing admin endpoint
// (lora-adapters, slots, props, models), matched on the path as the child will read it
// (percent-decoded, empty and "." segments dropped, ".." applied, any case).
bool is_admin(const RouteMatch& m, boost::beast::http::verb method);

// 400 without exactly one non-empty Host (RFC 9112 3.2); 403 when the policy does not serve it.
std::optional<Error> check_host(const GatePolicy& p, const boost::beast::http::fields& f);

// An Origin header's verdict: none (not sent), same (the door's own: http://<Host>), allowed
// (listed in cors.allowed_origins, or loopback under the "localhost" keyword), refused (anything else, including "null").
enum class OriginVerdict { none, same, allowed, refused };
OriginVerdict check_origin(const GatePolicy& p, std::string_view origin, std::string_view host);
// The verdict on a request's header: refused for more than one Origin (which one a browser sent
// is unknowable, so judging only the first would let a second one through unjudged).
OriginVerdict check_origin(const GatePolicy& p, const boost::beast::http::fields& f);

// True for application/json (any parameters) and application/<something>+json.
bool is_json_content_type(std::string_view content_type);

// The gate's refusals, one sentence each (the caller's error shape is applied by error_reply).
Error origin_refused();
Error not_json();

}  // namespace kevlaya::http
