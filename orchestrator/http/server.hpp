// The REST front door: an HTTP/1.1 server (keep-alive) that routes OpenAI-style and llama-server
// requests through Supervisor::acquire, streams SSE through unbuffered, runs pipelines, and
// exposes health, status and Prometheus metrics. Beast stays inside http/*.cpp.
//
//   http::Server door(supervisor, cfg, http::ServerOptions::from(cfg.orch), runner);
//   auto port = door.listen();   // Result<uint16_t>; port 0 = let the OS pick
//   door.start();
//   ... on SIGTERM: co_await door.stop(); co_await supervisor.shutdown();
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "http/pipeline_runner.hpp"
#include "ledger/snapshot.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<std::string> api_keys;  // empty = open; never logged or shown
  std::vector<std::string> admin_api_keys;  // /admin/* and /logs when set (http/auth.hpp: access)
  std::vector<std::string> allowed_hosts;    // Host names served besides loopback
  std::vector<std::string> allowed_origins;  // cors.allowed_origins
  config::RunsCfg runs;                      // pipeline runs queued at the door
  config::QueueCfg queue;
  config::LimitsCfg limits;
  std::size_t max_header_bytes = 16 * 1024;
  std::chrono::milliseconds keepalive_interval{500};  // SSE comments while a swap is in progress
  std::chrono::milliseconds events_keepalive{15000};  // GET /events: a comment after this silence
  std::size_t events_buffer = 256;  // GET /events: events queued per client; past it, it is dropped
  std::chrono::seconds upstream_deadline{600};        // one model call, whole exchange
  std::chrono::seconds drain_timeout{30};             // in-flight requests on shutdown
  config::ActivityCfg activity;          // session headers and the history's bounds
  std::filesystem::path activity_db;     // the request history's file; empty = no history (from(): state_dir)
  config::CaptureCfg capture;            // bodies of model calls in RAM (off by default)
  config::ToolsCfg tools;                // /tools: the tools host's settings (off unless enabled())
  std::string tools_binary;              // its server binary (from(): tools.binary, else models_binary's rule)
  std::filesystem::path log_dir, state_dir;  // the tools host's log and state file
  // Google Cloud Vertex AI (AIP_MODE=PREDICTION in the door's environment): the routes it calls,
  // answered as POST /predict and GET /health; empty = not in that mode (from(): docs/http.md).
  std::string vertex_predict_route, vertex_health_route;
  // The residency plan as /status shows it under "gpu" (plan_json); null = not planned here.
  nlohmann::json gpu_plan;

  // listen (AIP_HTTP_PORT in Vertex AI mode), keys, gate, queues, limits, tools.
  static ServerOptions from(const config::OrchestratorCfg& orch);
};

// What a configuration reload did (POST /admin/reload; runtime::Reloader fills it).
struct ReloadOutcome {
  bool ok = false;
  std::vector<std::string> errors;  // "file:line:col: error: ..." when the new config is invalid
  std::vector<std::string> changed, added, removed, unchanged;  // profile names
  std::vector<std::string> needs_restart;  // settings that keep their old value until a restart
};
using ReloadFn = std::function<boost::asio::awaitable<ReloadOutcome>()>;
// The ledger's plan for /status "gpu" and the status page: mode, budget, allowed sets and each
// profile's planned GPU bytes (weights, kv, compute, overhead, adapters) in MiB.
nlohmann::json plan_json(const ledger::Plan& plan);

class Door;

class Server {
 public:
  // `sup` must outlive the server; `runner` may be null (pipeline routes answer 503).
  Server(supervisor::Supervisor& sup, const ledger::SnapshotPtr& cfg, ServerOptions opt,
         std::shared_ptr<PipelineRunner> runner = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port; the error names the address (e.g. port already in use). Returns the port.
  Result<std::uint16_t> listen();
  // Starts the accept loop (after listen()).
  void start();
  // POST /admin/reload runs `fn` (on the door's executor); without one it answers 503.
  void set_reload(ReloadFn fn);
  // A reloaded configuration: routes, keys, Host/Origin rules, limits and queues follow it (the
  // listen address does not: it needs a restart). Calls in progress keep theirs. Applied at once
  // when called on the door's strand (as in Supervisor::reload's `switched`).
  void set_config(ledger::SnapshotPtr cfg, ServerOptions opt);
  // Stops accepting, closes idle connections, waits for in-flight requests (bounded by
  // drain_timeout), then closes what is left. Does not stop the supervisor.
  boost::asio::awaitable<void> stop();

 private:
  std::shared_ptr<Door> door_;
};

}  // namespace kevlaya::http
