// The door as a model server of the Kubernetes Gateway API Inference Extension (docs/scale-out.md):
// the node gauges its endpoint picker (EPP) reads from /metrics (waiting and running requests,
// KV-cache use, the resident models in the LoRA-info shape its affinity scorer reads) and the
// readiness endpoint GET /readyz[?model=X]. The pure parts are here; the routes are in
// model_server.cpp.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "http/errors.hpp"
#include "http/metrics.hpp"
#include "supervisor/types.hpp"

namespace kevlaya::http {

class Door;
class Connection;

// The families this file exports (the EPP's engine configuration names them: tools/k8s/chart).
inline constexpr std::string_view kWaitingMetric = "kevlaya_requests_waiting";
inline constexpr std::string_view kRunningMetric = "kevlaya_requests_running";
inline constexpr std::string_view kKvUsageMetric = "kevlaya_kv_cache_usage_ratio";
inline constexpr std::string_view kResidentMetric = "kevlaya_resident_models_info";

// Which models the node serves without a switch and which are being switched in.
struct ResidentSet {
  std::vector<std::string> running;  // ready local children and reachable remotes, with their aliases
  std::vector<std::string> waiting;  // local models with calls parked for a switch, or starting
  int max_models = 1;                // how many models the node holds at once (the EPP's max_lora)
};

// The residency of `snap` under `cfg` (rotate: one model at a time; co-resident: every profile;
// auto: what is resident now, at least 1).
ResidentSet residency_of(const config::Config& cfg, const supervisor::Snapshot& snap);

// KV-cache use, 0 to 1, from the bodies of the ready children's GET /slots: context held by
// processing slots over the slots' context. A processing slot that reports no token count counts
// whole; a body that is not a slot array is skipped. No slots: 0.
double kv_usage_from_slots(const std::vector<std::string>& slot_bodies);

// Declares the families above (once, with the door's other families).
void describe_model_server_metrics(Metrics& m);
// Sets them from `snap` and `kv` (the resident-models gauge's value: `unix_s`, the EPP keeps the latest).
void set_model_server_metrics(Metrics& m, const config::Config& cfg, const supervisor::Snapshot& snap,
                              int door_waiting, double kv, double unix_s);

// GET /readyz: 503 while `door_ready` is false (draining, preload not done); with ?model=X, 200
// only when X is served without a switch (404 for an unknown model). The body lists the residency.
Reply readiness_reply(const config::Config& cfg, const supervisor::Snapshot& snap, std::string_view query,
                      bool door_ready);

// The node gauges for /metrics: reads the ready children's /slots (Door::child_endpoints, short
// timeout, never a lease) and sets the families in d.metrics.
boost::asio::awaitable<void> update_model_server_metrics(Door& d, const supervisor::Snapshot& snap);
// GET /readyz[?model=X] (open, like /health: a kubelet probe sends no key).
boost::asio::awaitable<void> readyz(Door& d, Connection& c, std::string_view query, bool door_ready);

}  // namespace kevlaya::http
