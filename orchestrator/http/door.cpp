// The door itself: its state (Door), its options, listening, the accept loop with its connection
// limits (eviction, reserve, refusals) and the drain at stop. Connections are in server.cpp.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common/credentials.hpp"
#include "common/fd.hpp"
#include "config/models_dir.hpp"
#include "http/detail.hpp"

namespace kevlaya::http {

Door::Door(supervisor::Supervisor& s, const ledger::SnapshotPtr& c, ServerOptions o, std::shared_ptr<PipelineRunner> r)
    : strand(s.strand()), sup(s), snap(c), runner(std::move(r)), runs(std::make_unique<RunQueue>(*this)),
      drained(strand) {
  use_options(std::move(o));
  describe_metrics(metrics);
  if (!opt.activity_db.empty()) history = std::make_unique<activity::Recorder>(history_options(opt));
  if (opt.capture.enabled)
    captures = std::make_unique<activity::CaptureRing>(static_cast<std::size_t>(opt.capture.max_mib) << 20,
                                                       cfg().orch.state_dir.empty() ? cfg().orch.state_dir : cfg().orch.state_dir / "captures");
}

Door::~Door() = default;

void Door::use_options(ServerOptions o) {
  opt = std::move(o);
  std::erase_if(opt.activity.session_headers, [](const std::string& h) { return is_credential_header(h); });
  gate = GatePolicy::from(opt.host, opt.allowed_hosts, opt.allowed_origins);
}

void Door::request_done() {
  --in_flight;
  if (draining && in_flight == 0) drained.cancel();
}

namespace {

using boost::system::error_code;
using tcp = asio::ip::tcp;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

// Vertex AI runs a container with AIP_MODE=PREDICTION and tells it its port and two routes
// (llama-server reads the same variables). The door takes them; its children never see them
// (supervisor/child.cpp) except as the door sets them for their own port.
void apply_vertex_env(ServerOptions& o) {
  if (env_or("AIP_MODE", "") != "PREDICTION") return;
  o.vertex_predict_route = env_or("AIP_PREDICT_ROUTE", "/predict");
  o.vertex_health_route = env_or("AIP_HEALTH_ROUTE", "/health");
  const auto port = env_or("AIP_HTTP_PORT", "");
  if (port.empty()) return;
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (end && *end == '\0' && p > 0 && p < 65536) {
    spdlog::info("Vertex AI mode: listening on AIP_HTTP_PORT {} instead of {}", p, o.port);
    o.port = static_cast<int>(p);
  } else {
    spdlog::warn("Vertex AI mode: AIP_HTTP_PORT '{}' is not a port; listening on {}", port, o.port);
  }
}

}  // namespace

ServerOptions ServerOptions::from(const config::OrchestratorCfg& orch) {
  ServerOptions o;
  o.host = orch.listen.host;
  o.port = orch.listen.port;
  o.api_keys = orch.api_keys;
  o.admin_api_keys = orch.admin_api_keys;
  o.allowed_hosts = orch.allowed_hosts;
  o.allowed_origins = orch.cors.allowed_origins;
  o.runs = orch.runs;
  o.queue = orch.queue;
  o.limits = orch.limits;
  o.activity = orch.activity;
  o.capture = orch.capture;
  if (orch.activity.enabled && !orch.state_dir.empty()) o.activity_db = orch.state_dir / "activity.db";
  o.tools = orch.tools;
  o.tools_binary = !orch.tools.binary.empty()    ? orch.tools.binary
                   : !orch.models_binary.empty() ? orch.models_binary
                                                 : config::default_models_binary();
  o.log_dir = orch.log_dir;
  o.state_dir = orch.state_dir;
  apply_vertex_env(o);
  return o;
}

Server::Server(supervisor::Supervisor& sup, const ledger::SnapshotPtr& cfg, ServerOptions opt,
               std::shared_ptr<PipelineRunner> runner)
    : door_(std::make_shared<Door>(sup, cfg, std::move(opt), std::move(runner))) {
  std::weak_ptr<Door> weak = door_;
  door_->events_sub = sup.subscribe([weak](const supervisor::Event& e) {
    if (auto d = weak.lock()) asio::post(d->strand, [d, e] { on_event(d, e); });
  });
}

Server::~Server() {
  door_->events_sub.reset();
  if (door_->acceptor) {
    error_code ec;
    door_->acceptor->close(ec);
  }
}

Result<std::uint16_t> Server::listen() {
  Door& d = *door_;
  error_code ec;
  if (const auto why = config::listen_host_problem(d.opt.host)) return make_error(Errc::config_invalid, "listen.host: " + *why);
  const auto addr = asio::ip::make_address(d.opt.host, ec);
  if (ec) return make_error(Errc::config_invalid, "listen.host: '" + d.opt.host + "': " + ec.message());
  const tcp::endpoint ep(addr, static_cast<std::uint16_t>(d.opt.port));
  auto acc = std::make_unique<tcp::acceptor>(d.strand);
  acc->open(ep.protocol(), ec);
  if (!ec) set_cloexec(acc->native_handle());  // Asio 1.74 opens without SOCK_CLOEXEC
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    const std::string where = d.opt.host + ":" + std::to_string(d.opt.port);
    return make_error(Errc::unavailable, "cannot listen on " + where + ": " + ec.message(),
                      ec == asio::error::address_in_use
                          ? "another process uses that port; choose another with --port"
                          : "");
  }
  const auto port = acc->local_endpoint().port();
  d.acceptor = std::move(acc);
  return port;
}

namespace {

constexpr std::chrono::seconds kEvictIdle{1};  // idle this long = may be closed under pressure
constexpr int kMaxRefusing = 64;  // refused connections drained at once; past it, closed at once

std::int64_t open_connections(const Door& d) {
  return static_cast<std::int64_t>(d.conns.size()) - d.evicting - d.refusing;
}

// Closes up to `n` connections that hold a slot without an authorised request in progress: those
// answered and closing first, then the oldest idle, silent or trickling ones.
void make_room(Door& d, std::int64_t n) {
  const auto now = Clock::now();
  std::vector<Connection*> idle;
  for (auto* c : d.conns)
    if (c->evictable(now, kEvictIdle)) idle.push_back(c);
  const auto k = static_cast<std::size_t>(std::min<std::int64_t>(n, static_cast<std::int64_t>(idle.size())));
  std::partial_sort(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(k), idle.end(),
                    [](const Connection* a, const Connection* b) {
                      if (a->closing() != b->closing()) return a->closing();
                      return a->last_active() < b->last_active();
                    });
  for (std::size_t i = 0; i < k; ++i) idle[i]->evict();
}

asio::awaitable<void> accept_loop(std::shared_ptr<Door> d) {
  while (d->acceptor && d->acceptor->is_open()) {
    error_code ec;
    tcp::socket sock(d->strand);
    co_await d->acceptor->async_accept(sock, ec_token(ec));
    if (ec == asio::error::operation_aborted || d->draining) break;
    if (ec) {
      spdlog::warn("http: accept failed: {}", ec.message());
      continue;  // e.g. EMFILE; the loop keeps the door open for the next one
    }
    set_cloexec(sock.native_handle());  // Asio 1.74 accepts without accept4(SOCK_CLOEXEC)
    sock.set_option(tcp::no_delay(true), ec);  // SSE chunks must not wait for Nagle
    auto conn = std::make_shared<Connection>(d, std::move(sock));
    const auto& lim = d->opt.limits;
    const std::int64_t cap = static_cast<std::int64_t>(lim.max_connections) + lim.reserved_connections;
    // Past max_connections, as many idle (or silent, trickling, closing) connections as it takes
    // make room before the new one is put in the reserve, where it could only ask /health or
    // /metrics: with every slot held by silent sockets, closing one at a time left model calls at 503.
    if (const auto over = open_connections(*d) - lim.max_connections; over > 0) make_room(*d, over);
    const auto open = open_connections(*d);  // this one included
    if (open > cap) {
      conn->refuse(d->refusing < kMaxRefusing);
      continue;
    }
    if (open > lim.max_connections) conn->set_reserve_only();  // /health and /metrics only
    asio::co_spawn(d->strand, [conn] { return conn->run(); }, asio::detached);
  }
}

}  // namespace

void Server::start() {
  auto d = door_;
  if (d->opt.tools.enabled() && !d->tools) {  // the model-less llama-server behind /tools
    auto& ioc = static_cast<asio::io_context&>(asio::query(d->strand, asio::execution::context));
    d->tools = std::make_unique<supervisor::ToolsHost>(
        ioc, supervisor::ToolsHostOptions{d->opt.tools, d->opt.tools_binary, d->opt.log_dir, d->opt.state_dir});
    d->tools->start();
  }
  asio::co_spawn(d->strand, [d] { return accept_loop(d); }, asio::detached);
}

void Server::set_reload(ReloadFn fn) { door_->reload = std::move(fn); }

void Server::set_config(ledger::SnapshotPtr cfg, ServerOptions opt) {
  // Inline when called on the door's strand (the supervisor's reload turn), else posted there.
  asio::dispatch(door_->strand, [d = door_, c = std::move(cfg), opt = std::move(opt)]() mutable {
    opt.host = d->opt.host;  // the socket stays bound where it is (a restart moves it)
    opt.port = d->opt.port;
    opt.keepalive_interval = d->opt.keepalive_interval;
    opt.events_keepalive = d->opt.events_keepalive;
    opt.events_buffer = d->opt.events_buffer;
    opt.activity_db = d->opt.activity_db;  // the history's file stays open where it is
    opt.capture = d->opt.capture;          // and the captures' ring as it was made
    opt.tools = d->opt.tools;              // the tools host runs as started (reload: needs_restart)
    opt.tools_binary = d->opt.tools_binary;
    opt.vertex_predict_route = d->opt.vertex_predict_route;
    opt.vertex_health_route = d->opt.vertex_health_route;
    d->snap = std::move(c);
    d->use_options(std::move(opt));
  });
}

namespace {

// Runs on the door's strand (Server::stop spawns it there).
asio::awaitable<void> drain(std::shared_ptr<Door> d) {
  d->draining = true;
  error_code ec;
  if (d->acceptor) d->acceptor->close(ec);
  for (auto* c : std::vector<Connection*>(d->conns.begin(), d->conns.end())) c->close_if_idle();
  end_event_streams(*d);  // endless by design: they end now rather than hold the drain
  // Tool calls end now, as llama-server's stop ends them (one may run for minutes); model calls drain.
  if (d->tools) co_await d->tools->stop();
  if (d->in_flight > 0) {
    spdlog::info("http: waiting up to {}s for {} request(s) in flight", d->opt.drain_timeout.count(),
                 d->in_flight);
    d->drained.expires_after(d->opt.drain_timeout);
    co_await d->drained.async_wait(ec_token(ec));
  }
  for (auto* c : std::vector<Connection*>(d->conns.begin(), d->conns.end())) c->close();
}

}  // namespace

asio::awaitable<void> Server::stop() {
  co_await asio::co_spawn(door_->strand, drain(door_), asio::use_awaitable);
}

}  // namespace kevlaya::http
