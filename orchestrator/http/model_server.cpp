// The model-server protocol of the Gateway API Inference Extension on the door (model_server.hpp).
// The picker scores endpoints on a waiting-queue gauge, a running gauge, KV-cache use and the
// LoRA-info gauge; a swapping node publishes its resident models as "adapters" in that gauge, so
// the affinity scorer sends a model's calls to the node that holds it instead of into a switch.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <algorithm>
#include <cmath>

#include "activity/record.hpp"
#include "common/strings.hpp"
#include "http/apis.hpp"
#include "http/detail.hpp"
#include "http/model_server.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;
using supervisor::Phase;

constexpr std::chrono::milliseconds kSlotsTimeout{1000};  // a busy child is skipped, not waited for
constexpr std::size_t kMaxSlotsBytes = 1 << 20;

// Served without a switch: a ready local child, or a remote that answered its last check.
bool serves_now(const supervisor::ProfileStatus& p) {
  if (p.remote) return p.remote->state == remote::State::reachable;
  return p.state == Phase::ready;
}

// A profile's names as a request may spell them (the picker matches the request's `model`).
void add_names(std::vector<std::string>& out, const config::Config& cfg, const std::string& name) {
  out.push_back(name);
  if (const auto* prof = cfg.find_profile(name))
    for (const auto& a : prof->alias) out.push_back(a);
}

double number_or(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// Tokens a slot holds in its context: none when idle; its prompt and generated tokens when it
// reports them (next_token is an object or, in newer builds, an array of one); else all of it.
double slot_tokens(const json& slot, double n_ctx) {
  if (!slot.value("is_processing", false)) return 0;
  double tokens = number_or(slot, "n_prompt_tokens", -1);
  if (const auto nt = slot.find("next_token"); nt != slot.end()) {
    const json* first = nt->is_array() && !nt->empty() ? &(*nt)[0] : &*nt;
    if (first->is_object()) {
      const double decoded = number_or(*first, "n_decoded", -1);
      if (decoded >= 0) tokens = std::max(tokens, 0.0) + decoded;
    }
  }
  return tokens < 0 ? n_ctx : std::min(tokens, n_ctx);
}

json resident_json(const ResidentSet& r) {
  return {{"resident", r.running}, {"waiting", r.waiting}, {"max_models", r.max_models}};
}

}  // namespace

ResidentSet residency_of(const config::Config& cfg, const supervisor::Snapshot& snap) {
  ResidentSet r;
  int all_names = 0;
  for (const auto& p : snap.profiles) {
    std::vector<std::string> names;
    add_names(names, cfg, p.name);
    all_names += static_cast<int>(names.size());
    if (serves_now(p))
      r.running.insert(r.running.end(), names.begin(), names.end());
    else if (!p.remote && (p.state == Phase::starting || p.queued > 0))  // a switch to it is due
      r.waiting.insert(r.waiting.end(), names.begin(), names.end());
  }
  // The scorer compares the names it sees (aliases included) with max_lora: a node that must
  // switch to serve a model reports itself full, one that can load beside what it holds does not.
  const int running = static_cast<int>(r.running.size());
  switch (cfg.orch.residency) {
    case config::Residency::co_resident: r.max_models = std::max(1, all_names); break;
    case config::Residency::rotate:
    case config::Residency::auto_: r.max_models = std::max(1, running); break;
  }
  return r;
}

double kv_usage_from_slots(const std::vector<std::string>& slot_bodies) {
  double used = 0, total = 0;
  for (const auto& body : slot_bodies) {
    const json slots = json::parse(body, nullptr, false);
    if (!slots.is_array()) continue;
    for (const auto& s : slots) {
      if (!s.is_object()) continue;
      const double n_ctx = number_or(s, "n_ctx", 0);
      if (n_ctx <= 0) continue;
      total += n_ctx;
      used += slot_tokens(s, n_ctx);
    }
  }
  return total > 0 ? std::clamp(used / total, 0.0, 1.0) : 0.0;
}

void describe_model_server_metrics(Metrics& m) {
  using T = Metrics::Type;
  m.describe(std::string(kWaitingMetric), T::gauge,
             "Model requests waiting for a lease, calls parked for a switch included (EPP: queued requests).");
  m.describe(std::string(kRunningMetric), T::gauge, "Model requests holding a lease now (EPP: running requests).");
  m.describe(std::string(kKvUsageMetric), T::gauge,
             "KV-cache use of the ready children, 0 to 1, from their /slots (EPP: KV-cache utilization).");
  m.describe(std::string(kResidentMetric), T::gauge,
             "Models served without a switch (running_lora_adapters), being switched in (waiting_lora_adapters) "
             "and held at once (max_lora), in the EPP's LoRA-info shape; value: unix time of the scrape.");
}

void set_model_server_metrics(Metrics& m, const config::Config& cfg, const supervisor::Snapshot& snap,
                              int door_waiting, double kv, double unix_s) {
  // Waiting: the door's calls without a lease or the supervisor's queue, whichever is larger (they
  // count the same calls, parked for a switch included); running: leases held.
  m.set(kWaitingMetric, {}, std::max(door_waiting, static_cast<int>(snap.queued)));
  int running = 0;
  for (const auto& p : snap.profiles) running += p.in_flight;
  m.set(kRunningMetric, {}, running);
  m.set(kKvUsageMetric, {}, kv);
  const auto r = residency_of(cfg, snap);
  m.clear(kResidentMetric);  // one series: the EPP keeps the one with the latest value
  m.set(kResidentMetric,
        {{"running_lora_adapters", join(r.running, ",")}, {"waiting_lora_adapters", join(r.waiting, ",")},
         {"max_lora", std::to_string(r.max_models)}},
        std::floor(unix_s));
}

Reply readiness_reply(const config::Config& cfg, const supervisor::Snapshot& snap, std::string_view query,
                      bool door_ready) {
  json body = resident_json(residency_of(cfg, snap));
  if (!door_ready || snap.shutting_down) {
    body["status"] = "unavailable";
    return json_reply(503, body);
  }
  const std::string model = query_param(query, "model");
  if (model.empty()) {
    body["status"] = "ready";
    return json_reply(200, body);
  }
  const auto* prof = cfg.find_profile(model);
  if (!prof) return error_reply(make_error(Errc::not_found, "unknown model '" + model + "'"));
  const auto* st = snap.find(prof->name);
  const bool now = st && serves_now(*st);
  body["model"] = prof->name;
  body["status"] = now ? "ready" : "needs_switch";
  return json_reply(now ? 200 : 503, body);
}

asio::awaitable<void> update_model_server_metrics(Door& d, const supervisor::Snapshot& snap) {
  std::vector<upstream::Endpoint> ready;  // as child_metrics.cpp: ready children only, no lease
  for (const auto& [child, ep] : d.child_endpoints) {
    const auto phase = d.phases.find(child);
    if (phase != d.phases.end() && phase->second == Phase::ready) ready.push_back(ep);
  }
  std::vector<std::string> bodies;
  for (const auto& ep : ready) {
    upstream::Request req;
    req.target = "/slots";
    req.timeout = kSlotsTimeout;
    auto res = co_await upstream::fetch(d.strand, ep, std::move(req));
    if (res && res->status == 200 && res->body.size() <= kMaxSlotsBytes) bodies.push_back(std::move(res->body));
  }
  set_model_server_metrics(d.metrics, d.cfg(), snap, d.waiting, kv_usage_from_slots(bodies),
                           static_cast<double>(activity::unix_ms()) / 1000.0);
}

asio::awaitable<void> readyz(Door& d, Connection& c, std::string_view query, bool door_ready) {
  const std::string q(query);  // the request's target may not outlive the snapshot's wait
  const auto snap = co_await d.sup.snapshot();
  co_await c.send(readiness_reply(d.cfg(), snap, q, door_ready && !d.draining));
}

}  // namespace kevlaya::http
