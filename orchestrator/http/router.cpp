// Routing, auth and the operations endpoints (/health, /status, /metrics, /v1/models, /admin).
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <string_view>
#include <unordered_map>

#include "common/clock.hpp"
#include "common/strings.hpp"
#include "config/backend.hpp"
#include "http/apis.hpp"
#include "http/auth.hpp"
#include "http/bodies.hpp"
#include "http/detail.hpp"
#include "http/gate.hpp"
#include "http/model_server.hpp"
#include "http/router_api.hpp"
#include "http/ui.hpp"
#include "ledger/snapshot.hpp"
#include "warm/page_cache.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;
using supervisor::Phase;

// The state names of /v1/models, /status and metrics: the child's Phase, as everywhere.
std::string_view model_state(Phase s) { return supervisor::to_string(s); }

// (JSON is built in plain functions: GCC 12 rejects some braced string-literal initialisers
// inside coroutines.)
// One /v1/models entry: OpenAI's model object, its aliases (as llama-server lists them) and state.
json model_json(const config::Profile& prof, const supervisor::Snapshot& snap, std::int64_t created) {
  const auto* st = snap.find(prof.name);
  json k = {{"profile", prof.name}, {"state", st ? model_state(st->state) : "stopped"}, {"aliases", prof.alias},
            {"backend", config::backend_of(prof).name}};
  if (st && st->remote) k["remote"] = remote_json(*st->remote);
  if (st && st->state == Phase::failed && st->last_failure) {
    k["reason"] = st->last_failure->message;
    k["hint"] = st->last_failure->hint;
    k["retry_after_s"] = st->retry_after_s;
  }
  // Every name the model answers to, as llama-server lists its --alias names (its own included).
  json names = json::array({prof.name});
  for (const auto& a : prof.alias) names.push_back(a);
  return {{"id", prof.name}, {"object", "model"}, {"created", created}, {"owned_by", "kevlaya"},
          {"aliases", std::move(names)}, {"tags", prof.tags}, {"status", router_status_json(prof, st)},
          {"kevlaya", std::move(k)}};
}

// Each profile once; aliases are listed in it, not as models of their own.
json models_json(const Door& d, const supervisor::Snapshot& snap) {
  json data = json::array();
  const auto created = activity::unix_ms() / 1000;
  for (const auto& prof : d.cfg().profiles) data.push_back(model_json(prof, snap, created));
  return {{"object", "list"}, {"data", data}};
}

asio::awaitable<void> models(Door& d, Connection& c) {
  const auto snap = co_await d.sup.snapshot();
  co_await c.send(json_reply(200, models_json(d, snap)));
}

// (Plain function: GCC 12 double-destroys class temporaries of ?: inside coroutines.)
Reply unknown_model_reply(const config::Config& cfg, const std::string& id) {
  auto known = cfg.resolve_model(id);  // its error lists the known models
  if (known) return error_reply(make_error(Errc::not_found, "unknown model"));
  return error_reply(known.error());
}

// GET /v1/models/{id}: the profile `id` names (an alias answers with its profile's entry).
asio::awaitable<void> model_info(Door& d, Connection& c, const std::string& id) {
  const auto version = d.snap;  // `prof` is read after a wait: its version stays alive
  const auto* prof = version->config.find_profile(id);
  if (!prof) co_return co_await c.reply(unknown_model_reply(version->config, id));
  const auto snap = co_await d.sup.snapshot();
  co_await c.send(json_reply(200, model_json(*prof, snap, activity::unix_ms() / 1000)));
}

json status_json(const Door& d, const supervisor::Snapshot& snap) {
  json resident = json::array(), profiles = json::array(), failures = json::array(),
       switches = json::array(), by_model = json::object();
  std::size_t fresh = warm::kResidencyFreshPerCall;  // page-cache measurements this call may make
  std::unordered_map<std::string_view, const config::Profile*> by_name;  // one lookup per profile
  for (const auto& prof : d.cfg().profiles) by_name.emplace(prof.name, &prof);
  for (const auto& p : snap.profiles) {
    const bool local = !p.remote;  // a remote holds no local residency
    if (local && (p.state == Phase::ready || p.state == Phase::draining)) resident.push_back(p.name);
    by_model[p.name] = p.queued;
    json j = {{"name", p.name}, {"state", model_state(p.state)}, {"pid", p.pid}, {"port", p.port},
              {"in_flight", p.in_flight}, {"queued", p.queued},
              {"restarts_in_window", p.restarts_in_window}, {"total_restarts", p.total_restarts},
              {"crashes", p.crashes}, {"pinned", p.pinned}};
    j["gpus"] = p.gpus.empty() ? json(nullptr) : json(p.gpus);  // the devices of its child (placement)
    j["idle_unload_in_s"] = p.idle_unload_in_s ? json(std::round(*p.idle_unload_in_s * 10) / 10) : json(nullptr);
    j["load_progress"] = nullptr;
    if (const auto& lp = p.load_progress) {  // eta_s: docs/lifecycle.md, "Load ETA"
      j["load_progress"] = {{"stage", lp->stage}, {"pct", lp->pct ? json(*lp->pct) : json(nullptr)}};
      if (lp->eta_s) j["load_progress"]["eta_s"] = std::round(*lp->eta_s * 10) / 10;
    }
    if (auto it = d.feed.since_ms.find(p.name); it != d.feed.since_ms.end()) j["since_ms"] = it->second;
    const auto named = by_name.find(p.name);
    const auto* prof = named != by_name.end() ? named->second : d.cfg().find_profile(p.name);
    if (prof) j["backend"] = config::backend_of(*prof).name;
    j["remote"] = p.remote ? remote_json(*p.remote) : json(nullptr);
    if (prof && config::backend_of(*prof).llama_server && !prof->model.empty())
      if (const auto pct = warm::resident_pct_cached(prof->model, fresh))
        j["page_cache_pct"] = *pct;  // -1: file unreadable; absent: not measured yet (docs/warm.md)
    if (p.last_failure) {
      j["last_failure"] = failure_json(*p.last_failure);
      failures.push_back({{"model", p.name}, {"failure", failure_json(*p.last_failure)},
                          {"retry_after_s", p.retry_after_s}});
    }
    profiles.push_back(std::move(j));
  }
  for (const auto& s : snap.recent_switches) switches.push_back(switch_json(s));
  const auto& rs = d.runs->stats();
  json runs = {{"queued", rs.queued}, {"queued_bytes", rs.queued_bytes},
               {"max_queued", d.opt.runs.max_queued}, {"max_queued_bytes", d.opt.runs.max_queued_bytes},
               {"kept", rs.kept}, {"kept_bytes", rs.kept_bytes}, {"refused", rs.refused}};
  json body = {{"uptime_s", seconds_since(d.started_at)},
               {"resident", resident},
               {"queue", {{"door_waiting", d.waiting}, {"max_depth", d.opt.queue.max_depth},
                          {"supervisor_queued", snap.queued}, {"by_model", by_model}}},
               {"in_flight_requests", d.in_flight},
               {"connections", d.conns.size()},
               {"pipeline_runs", runs},
               {"profiles", profiles},
               {"recent_switches", switches},
               {"failures", failures},
               {"shutting_down", snap.shutting_down || d.draining}};
  body["devices"] = json::array();
  for (const auto& dev : snap.devices)
    body["devices"].push_back({{"index", dev.index}, {"name", dev.name}, {"vram_mib", dev.vram_mib}});
  body["activity"] = activity_status_json(d);  // the request history: written, dropped, its error
  json extras = feed_status_json(d);  // the status page's extras
  for (auto& [k, v] : extras.items()) body[k] = std::move(v);
  return body;
}

asio::awaitable<void> status(Door& d, Connection& c) {
  const auto snap = co_await d.sup.snapshot();
  json body = status_json(d, snap);
  if (!c.sees_logs()) drop_log_tails(body);
  co_await c.send(json_reply(200, body));
}

Reply metrics_reply(Door& d, const supervisor::Snapshot& snap) {
  auto& m = d.metrics;
  m.set("kevlaya_uptime_seconds", {}, seconds_since(d.started_at));
  m.set("kevlaya_queue_depth", {}, d.waiting);
  m.set("kevlaya_open_connections", {}, static_cast<double>(d.conns.size()));
  m.set("kevlaya_config_versions", {}, static_cast<double>(ledger::Snapshot::live()));
  const auto& rs = d.runs->stats();
  m.set("kevlaya_pipeline_runs_queued", {}, static_cast<double>(rs.queued));
  m.set("kevlaya_pipeline_runs_queued_bytes", {}, static_cast<double>(rs.queued_bytes));
  m.set("kevlaya_pipeline_runs_refused_total", {}, static_cast<double>(rs.refused));
  m.clear("kevlaya_model_state");
  std::size_t fresh = warm::kResidencyFreshPerCall;  // page-cache measurements this call may make
  for (const auto& p : snap.profiles) {
    m.set("kevlaya_model_queue_depth", {{"model", p.name}}, p.queued);
    m.set("kevlaya_child_restarts_total", {{"model", p.name}}, p.total_restarts);
    m.set("kevlaya_child_crashes_total", {{"model", p.name}}, p.crashes);
    Labels state = {{"model", p.name}, {"state", std::string(model_state(p.state))}};
    if (!p.gpus.empty())  // "0", or "0,1" for a split child
      state.emplace_back("gpu", join(p.gpus, ",", [](int g) { return std::to_string(g); }));
    m.set("kevlaya_model_state", state, 1);
    if (p.remote)
      m.set("kevlaya_remote_up", {{"model", p.name}}, p.remote->state == remote::State::reachable ? 1 : 0);
    if (const auto* prof = d.cfg().find_profile(p.name);
        prof && config::backend_of(*prof).llama_server && !prof->model.empty())
      if (const auto pct = warm::resident_pct_cached(prof->model, fresh))
        m.set("kevlaya_model_page_cache_percent", {{"model", p.name}}, *pct);
  }
  for (const auto& dev : snap.devices)
    m.set("kevlaya_gpu_memory_bytes", {{"gpu", std::to_string(dev.index)}, {"name", dev.name}},
          static_cast<double>(dev.vram_mib) * 1024 * 1024);
  Reply r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = m.render();
  return r;
}

// The door's own families, then the ready children's `llamacpp:*` ones (child_metrics.cpp).
asio::awaitable<void> metrics(Door& d, Connection& c) {
  const auto snap = co_await d.sup.snapshot();
  co_await update_model_server_metrics(d, snap);  // the EPP's node gauges (model_server.cpp)
  Reply r = metrics_reply(d, snap);
  const std::string children = co_await child_metrics_text(d);
  r.body += children;
  co_await c.send(std::move(r));
}

// `router`: llama-server's router API (POST /models/load) answers {"success": true}.
Reply loaded_reply(const std::string& model, std::int64_t ms, bool router) {
  if (router) return json_reply(200, {{"success", true}});
  return json_reply(200, {{"loaded", model}, {"ms", ms}});
}

Reply unloaded_reply(bool router) {
  return json_reply(200, router ? json{{"success", true}} : json{{"unloaded", true}});
}

// With preload, /health is llama-server's 503 "Loading model" until the preloaded children have
// started (latched: a later switch never fails it): the first start event has come and no child
// is starting; with tools, also until the tools host's first start has ended. /livez (`live`)
// only says the process serves.
Reply health_reply(Door& d, bool live) {
  if (d.draining && !live) return json_reply(503, {{"status", "draining"}});
  if (!live && !d.preload_ready && !d.cfg().orch.preload.empty())
    d.preload_ready = !d.phases.empty() && std::none_of(d.phases.begin(), d.phases.end(), [](const auto& kv) {
      return kv.second == Phase::starting;
    });
  const bool loading = (!d.preload_ready && !d.cfg().orch.preload.empty()) || (d.tools && !d.tools->settled());
  if (!live && loading)
    return json_reply(503, {{"error", {{"code", 503}, {"message", "Loading model"}, {"type", "unavailable_error"}}}});
  return json_reply(200, {{"status", "ok"}, {"uptime_s", seconds_since(d.started_at)}});
}

Reply unauthorized_reply() {
  auto r = error_reply(make_error(Errc::unauthorized, "missing or invalid API key",
                                  "send 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'"));
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

asio::awaitable<void> admin_load(Door& d, Connection& c, const std::string& model, bool router = false) {
  const auto t0 = Clock::now();
  const auto st = co_await d.sup.ensure_ready(model);  // the supervisor's admission and max wait
  if (!st) co_return co_await c.reply(error_reply(st.error()));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  co_await c.send(loaded_reply(model, ms, router));
}

asio::awaitable<void> admin_unload(Door& d, Connection& c, std::string model, bool router = false) {
  std::optional<std::string> only;
  if (!model.empty()) only = std::move(model);
  const auto st = co_await d.sup.unload(only);
  if (!st) co_return co_await c.reply(error_reply(st.error()));
  co_await c.send(unloaded_reply(router));
}

// POST /models/load and /models/unload: the router's {"model": name} body, the handlers above.
asio::awaitable<void> router_models(Door& d, const Request& req, Connection& c, bool load) {
  auto name = router_model_name(d.cfg(), req.body());
  if (!name) co_return co_await c.reply(error_reply(name.error()));
  if (load) co_return co_await admin_load(d, c, *name, true);
  co_await admin_unload(d, c, *name, true);
}

json reload_json(const ReloadOutcome& r) {
  return {{"ok", r.ok}, {"errors", r.errors}, {"changed", r.changed}, {"added", r.added},
          {"removed", r.removed}, {"unchanged", r.unchanged}, {"needs_restart", r.needs_restart}};
}

Reply reload_reply(const ReloadOutcome& r) {
  if (r.ok) return json_reply(200, reload_json(r));
  Error e = make_error(Errc::bad_request, "the new configuration is invalid; nothing changed",
                       "fix the errors listed (detail) and reload again");
  e.detail = r.errors;
  return error_reply(e);
}

asio::awaitable<void> admin_reload(Door& d, Connection& c) {
  if (!d.reload)
    co_return co_await c.reply(error_reply(make_error(Errc::unavailable, "reload is not available in this process")));
  const auto r = co_await d.reload();
  co_await c.send(reload_reply(r));
}

// A preflight. `requested`: its Access-Control-Request-Headers. A refused origin gets llama-server's
// 200 without any Access-Control-Allow-* header (the browser then refuses the page's call).
Reply options_reply(const GatePolicy& g, const RouteMatch& m, OriginVerdict verdict, std::string_view requested) {
  if (m.route == Route::none || m.route == Route::root)  // (GET / only redirects browsers)
    return error_reply(make_error(Errc::not_found, "no such route"));
  Reply r;
  r.status = verdict == OriginVerdict::refused ? 200 : 204;
  r.headers.emplace_back("Allow", std::string(allow_of(m)));
  if (verdict == OriginVerdict::none || verdict == OriginVerdict::refused) return r;
  r.status = 200;
  if (g.any_origin) {  // "*": llama-server's answer without --cors-origins, header for header
    r.headers.emplace_back("Access-Control-Allow-Credentials", "true");
    r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    r.headers.emplace_back("Access-Control-Allow-Headers", "*");
    return r;
  }
  // A listed origin in llama-server's shape (200, the requested headers allowed): exactly that
  // origin, no credentials (no cookies exist).
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST");
  r.headers.emplace_back("Access-Control-Allow-Headers",
                         requested.empty() ? "Authorization, Content-Type, X-Api-Key" : std::string(requested));
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  return r;
}

Reply method_not_allowed(const RouteMatch& m, std::string_view method) {
  auto r = error_reply(make_error(Errc::method_not_allowed,
                                  std::string(method) + " is not allowed here; use " +
                                      (m.method == bhttp::verb::post ? "POST" : "GET")));
  r.headers.emplace_back("Allow", std::string(allow_of(m)));
  return r;
}

Reply reserve_only_reply() {
  Error e = make_error(Errc::unavailable, "too many connections (this one may only ask /health or /metrics)");
  e.retry_after_s = 1;
  return error_reply(e);
}

// The gate (gate.hpp), in order: Host, Origin, preflight, reserve slot, auth, route, method, type.
// Returns the refusal, or nullopt when the request may go to its route.
std::optional<Reply> gate(Door& d, const Request& req, Connection& c, const RouteMatch& m) {
  const auto authorization = header(req, bhttp::field::authorization), x_api_key = header(req, "X-Api-Key");
  c.set_sees_logs(sees_logs(d.opt.admin_api_keys, authorization, x_api_key));
  if (auto e = check_host(d.gate, req)) return error_reply(*e);
  const auto origin = header(req, bhttp::field::origin);
  const auto verdict = check_origin(d.gate, req);
  if (req.method() == bhttp::verb::options) {
    if (verdict == OriginVerdict::allowed || verdict == OriginVerdict::same) c.set_cors_origin(origin);
    return options_reply(d.gate, m, verdict, header(req, "Access-Control-Request-Headers"));
  }
  if (verdict == OriginVerdict::refused) return error_reply(origin_refused());
  if (verdict != OriginVerdict::none) c.set_cors_origin(origin);
  if (c.reserve_only() && m.route != Route::health && m.route != Route::metrics) return reserve_only_reply();
  if (m.route == Route::health && req.method() == bhttp::verb::get) return std::nullopt;  // open
  // The status page's files are public (its data comes from /status etc. with the key); GET / of
  // a browser is sent there. Any other request to / gets the 404 below, after auth, as before.
  if (m.route == Route::ui && req.method() == bhttp::verb::get) return std::nullopt;
  if (m.route == Route::root && req.method() == bhttp::verb::get &&
      ui::prefers_html(header(req, bhttp::field::accept)))
    return std::nullopt;
  switch (access(d.opt.api_keys, d.opt.admin_api_keys, is_admin(m, req.method()), authorization, x_api_key)) {
    case Access::granted: break;
    case Access::unauthorized: return unauthorized_reply();
    case Access::forbidden:
      return error_reply(make_error(Errc::forbidden,
                                    "this key may call models but not /admin, /logs, POST /tools or a "
                                    "child's admin endpoints under /upstream/",
                                    "use one of admin_api_keys; see docs/security.md"));
  }
  if (m.route == Route::none || m.route == Route::root) {
    const std::string_view target(req.target().data(), req.target().size());
    return error_reply(make_error(Errc::not_found, "no route for " + std::string(req.method_string()) +
                                                       " " + std::string(target.substr(0, target.find('?')))));
  }
  const bool method_ok = m.get_or_post ? req.method() == bhttp::verb::get || req.method() == bhttp::verb::post
                                       : req.method() == m.method;
  if (!method_ok) {
    const auto ms = req.method_string();
    return method_not_allowed(m, std::string_view(ms.data(), ms.size()));
  }
  // A POST without a JSON type is what a page sends without a preflight: refused from a browser
  // (Origin on every POST, Sec-Fetch-* on every request), read as JSON from anyone else (curl -d).
  if (req.method() == bhttp::verb::post && !is_json_content_type(header(req, bhttp::field::content_type)) &&
      (!origin.empty() || !header(req, "Sec-Fetch-Mode").empty() || !header(req, "Sec-Fetch-Site").empty()))
    return error_reply(not_json());
  return std::nullopt;
}

// Vertex AI mode: its predict and health routes are the door's POST /predict (forwarded to the
// model's child, which serves it in that mode) and GET /health.
void vertex_target(const ServerOptions& o, Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const auto path = target.substr(0, target.find('?'));
  if (path == o.vertex_predict_route && path != "/predict") req.target("/predict");
  else if (path == o.vertex_health_route && path != "/health") req.target("/health");
}

bool async_query(std::string_view query) {
  return query.find("async=1") != std::string_view::npos || query.find("async=true") != std::string_view::npos;
}

}  // namespace

asio::awaitable<void> route(Door& d, Request& req, Connection& c) {
  if (!d.opt.vertex_predict_route.empty()) vertex_target(d.opt, req);
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view query = query_of(target), path = target.substr(0, target.find('?'));
  const auto m = match_route(path);
  if (auto refusal = gate(d, req, c, m))  // in the caller's API shape (Anthropic, Ollama, ...)
    co_return co_await c.reply(reshape_error(std::move(*refusal), shape_of_path(path)));
  switch (m.route) {
    case Route::health:
      if (m.arg == "ready") co_return co_await readyz(d, c, query, health_reply(d, false).status == 200);
      co_return co_await c.reply(health_reply(d, m.arg == "live"));
    case Route::model_api:
    case Route::upstream: co_return co_await model_call(d, req, c, m);
    case Route::ollama: co_return co_await ollama_call(d, req, c, m);
    case Route::models: co_return co_await models(d, c);
    case Route::model_info: co_return co_await model_info(d, c, std::string(m.arg));
    case Route::status: co_return co_await status(d, c);
    case Route::metrics: co_return co_await metrics(d, c);
    case Route::events: co_return co_await events(d, c);
    case Route::admin_load: co_return co_await admin_load(d, c, std::string(m.arg));
    case Route::admin_unload: co_return co_await admin_unload(d, c, std::string(m.arg));
    case Route::admin_reload: co_return co_await admin_reload(d, c);
    case Route::router_load:
    case Route::router_unload: co_return co_await router_models(d, req, c, m.route == Route::router_load);
    case Route::pipeline_runs: co_return co_await d.runs->post_run(req, c, std::string(m.arg), async_query(query));
    case Route::run: co_return co_await d.runs->get_run(c, std::string(m.arg));
    case Route::ui: co_return co_await c.reply(ui_reply(req, m.arg));
    case Route::root: co_return co_await c.reply(redirect_to_ui());
    case Route::logs: co_return co_await logs(d, c, std::string(m.arg), query);
    case Route::activity: co_return co_await activity_route(d, req, c, query);
    case Route::requests: co_return co_await c.reply(json_reply(200, in_flight_json(d)));
    case Route::admin_cancel: co_return co_await cancel_request(d, c, m.arg);
    case Route::admin_capture: co_return co_await capture_route(d, c, std::string(m.arg));
    case Route::slot_action: co_return co_await slot_action(d, req, c, m);
    case Route::cors_proxy: co_return co_await cors_proxy(d, req, c);
    case Route::tools: co_return co_await tools_route(d, req, c);
    case Route::none: break;
  }
}

void describe_metrics(Metrics& m) {
  using T = Metrics::Type;
  const std::vector<double> secs = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  const std::vector<double> tps = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
  m.describe("kevlaya_uptime_seconds", T::gauge, "Seconds since the REST door started.");
  m.describe("kevlaya_open_connections", T::gauge, "Client connections open now.");
  m.describe("kevlaya_config_versions", T::gauge,
             "Configuration versions alive: the one in force, and older ones a call or a child still runs.");
  m.describe("kevlaya_queue_depth", T::gauge, "Model requests waiting at the door for a lease.");
  m.describe("kevlaya_model_queue_depth", T::gauge, "Requests queued in the supervisor, by model.");
  m.describe("kevlaya_model_state", T::gauge, "1 for the current state of each model profile (gpu: its devices).");
  m.describe("kevlaya_gpu_memory_bytes", T::gauge, "Memory of each GPU the plan uses (NVML or gpu.devices).");
  m.describe("kevlaya_remote_up", T::gauge, "1 when a remote profile answered its last health check, else 0.");
  m.describe("kevlaya_requests_total", T::counter, "Model requests answered, by model and status.");
  m.describe("kevlaya_request_duration_seconds", T::histogram,
             "Model request latency at the door (queue + switch + generation).", secs);
  m.describe("kevlaya_time_to_first_token_seconds", T::histogram,
             "Arrival of a model request to the child's first response byte, by model.", secs);
  m.describe("kevlaya_queue_wait_seconds", T::histogram,
             "Time a model request waited for its model (queue and switch), by model.", secs);
  m.describe("kevlaya_switches_total", T::counter, "Model switches, by result.");
  m.describe("kevlaya_switches_ahead_total", T::counter,
             "Model switches started on a prediction (scheduling.switch_ahead), by result.");
  m.describe("kevlaya_switch_phase_seconds", T::histogram, "Duration of each phase of a switch.", secs);
  m.describe("kevlaya_switch_prefetch_resident_percent", T::gauge,
             "Percent of the model file in the page cache when its last start began, by model.");
  m.describe("kevlaya_model_page_cache_percent", T::gauge, "Percent of each model file in the page cache now.");
  m.describe("kevlaya_child_restarts_total", T::counter, "Child restarts, by model.");
  m.describe("kevlaya_child_crashes_total", T::counter, "Child deaths after ready, by model.");
  m.describe("kevlaya_load_failures_total", T::counter, "Failed child starts, by model and cause.");
  m.describe("kevlaya_generation_tokens_per_second", T::histogram,
             "Generation speed reported in responses' timings, by model.", tps);
  m.describe("kevlaya_prompt_tokens_per_second", T::histogram,
             "Prompt processing speed reported in responses' timings, by model.", tps);
  m.describe("kevlaya_pipeline_verdicts_total", T::counter, "Pipeline runs, by pipeline and verdict.");
  m.describe("kevlaya_pipeline_runs_queued", T::gauge, "Pipeline runs waiting or running at the door.");
  m.describe("kevlaya_pipeline_runs_queued_bytes", T::gauge, "Request bytes of the queued pipeline runs.");
  m.describe("kevlaya_pipeline_runs_refused_total", T::counter,
             "Pipeline runs refused with 429 (runs.max_queued / runs.max_queued_bytes).");
  describe_model_server_metrics(m);
}

void record_switch(const std::shared_ptr<Door>& dp, const supervisor::SwitchRecord& rec) {
  Door& d = *dp;
  auto& m = d.metrics;
  m.inc("kevlaya_switches_total", {{"result", rec.ok ? "ok" : "failed"}});
  if (rec.ahead) m.inc("kevlaya_switches_ahead_total", {{"result", rec.ok ? "ok" : "failed"}});
  const std::pair<const char*, std::int64_t> phases[] = {
      {"drain", rec.drain_ms}, {"stop", rec.stop_ms}, {"vram_wait", rec.vram_wait_ms},
      {"spawn_to_listening", rec.spawn_to_listening_ms}, {"detect", rec.detect_ms},
      {"total", rec.total_ms}, {"save", rec.save_ms}, {"restore", rec.restore_ms}};
  for (const auto& [phase, ms] : phases)
    m.observe("kevlaya_switch_phase_seconds", {{"phase", phase}}, static_cast<double>(ms) / 1000.0);
  if (rec.ok && rec.prefetch_resident_pct >= 0)
    m.set("kevlaya_switch_prefetch_resident_percent", {{"model", rec.to}}, rec.prefetch_resident_pct);
  if (rec.ok) {
    d.switch_s.add(static_cast<double>(rec.total_ms) / 1000.0);
    spdlog::info("switch {} -> {}: {} ms", rec.from.empty() ? "(none)" : rec.from, rec.to, rec.total_ms);
    return;
  }
  spdlog::warn("switch {} -> {} failed: {}", rec.from.empty() ? "(none)" : rec.from, rec.to, rec.error);
  m.inc("kevlaya_load_failures_total", {{"model", rec.to}, {"cause", std::string(supervisor::to_string(rec.failure))}});
}

}  // namespace kevlaya::http
