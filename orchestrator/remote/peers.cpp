#include "remote/peers.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "config/backend.hpp"
#include "upstream/blocking.hpp"
#include "upstream/client.hpp"

namespace kevlaya::remote {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr auto kRetryGap = std::chrono::seconds(1);
constexpr auto kFetchTimeout = std::chrono::seconds(5);

std::string names_in(const config::Profile& p) {
  std::string s = p.name;
  for (const auto& a : p.alias) s += ", " + a;
  return s;
}

// One GET /v1/models of `peer`, on a private io_context (startup, before the door runs).
Result<std::string> fetch_models(const config::PeerCfg& peer) {
  const auto url = config::parse_http_url(peer.url, nullptr);
  if (!url) return make_error(Errc::config_invalid, "peer " + peer.url + ": not an http:// URL");
  upstream::Endpoint ep(url->host, static_cast<std::uint16_t>(url->port));
  ep.base_path = url->base_path;
  ep.api_key = peer.api_key;
  upstream::Request req;
  req.target = "/v1/models";
  req.timeout = kFetchTimeout;
  auto got = upstream::run_blocking<upstream::Response>(
      [&](asio::any_io_executor ex) { return upstream::fetch(ex, ep, req); });
  if (!got) return got.error();
  if (got->status != 200)
    return make_error(Errc::upstream_error, "GET /v1/models answered HTTP " + std::to_string(got->status) +
                                                (got->status == 401 ? " (check the peer's api_key)" : ""));
  return std::move(got->body);
}

// A peer door's GET /v1/models body -> one remote profile per model it serves itself (its own
// remote models are skipped: no second hop). Each is named like the model, points at the peer
// with its key, and is checked through GET /v1/models/{name} there (a model the peer no longer
// serves shows as unreachable).
Result<std::vector<config::Profile>> profiles_from_models(const config::PeerCfg& peer, std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array())
    return make_error(Errc::upstream_error, "peer " + peer.url + ": /v1/models is not an OpenAI model list");
  std::vector<config::Profile> out;
  for (const auto& m : j["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
    const auto k = m.value("kevlaya", json::object());
    if (k.is_object() && k.value("backend", "") == "remote") continue;  // the peer's own remotes
    config::Profile p = config::remote_profile(m["id"].get<std::string>(), peer.url);
    p.loc = peer.loc;
    p.api_key = peer.api_key;
    p.peer = peer.url;
    // Checked through the peer's own entry for it: a model the peer stops serving becomes
    // unreachable here ("answered HTTP 404") at the next check, not silently misrouted.
    p.health.path = "/v1/models/" + p.name;
    if (m.contains("aliases") && m["aliases"].is_array())
      for (const auto& a : m["aliases"])
        if (a.is_string()) p.alias.push_back(a.get<std::string>());
    out.push_back(std::move(p));
  }
  return out;
}
// Appends `imported` to `cfg`; a name or alias that is already taken (by a profile of this door
// or of an earlier peer) is an error naming both, and nothing is appended.
Status add_imported(config::Config& cfg, const std::vector<config::Profile>& imported) {
  std::vector<config::Profile> all = cfg.profiles;  // appended one by one: a clash leaves cfg as it was
  config::Config probe;
  for (const auto& p : imported) {
    probe.profiles = all;
    std::vector<std::string> names = p.alias;
    names.insert(names.begin(), p.name);
    for (const auto& n : names) {
      const config::Profile* owner = probe.find_profile(n);
      if (!owner) continue;
      const std::string where = owner->peer.empty() ? "profile '" + owner->name + "' (" + owner->loc.file + ")"
                                                    : "model '" + owner->name + "' of peer " + owner->peer;
      return make_error(Errc::config_invalid,
                        "peer " + p.peer + " serves a model named '" + n + "', which " + where + " already uses",
                        "rename one of them (a profile's name or alias, or the model on the peer)");
    }
    all.push_back(p);
  }
  cfg.profiles = std::move(all);
  return ok_status();
}

}  // namespace

Status carry_imported(config::Config& next, const config::Config& running) {
  std::vector<config::Profile> kept;
  for (const auto& p : running.profiles) {
    const auto still = [&p](const config::PeerCfg& peer) { return peer.url == p.peer; };
    if (!p.peer.empty() && std::any_of(next.orch.peers.begin(), next.orch.peers.end(), still)) kept.push_back(p);
  }
  return add_imported(next, kept);
}

Status import_peers(config::Config& cfg, std::chrono::milliseconds wait) {
  for (const auto& peer : cfg.orch.peers) {
    const auto until = std::chrono::steady_clock::now() + wait;
    Result<std::string> body = make_error(Errc::internal, "not asked");
    for (;;) {
      body = fetch_models(peer);
      if (body || std::chrono::steady_clock::now() + kRetryGap > until) break;
      spdlog::info("peer {}: {}; retrying", peer.url, body.error().message);
      std::this_thread::sleep_for(kRetryGap);
    }
    if (!body) {
      Error e = body.error();
      e.code = Errc::config_invalid;
      e.message = "peer " + peer.url + " did not list its models: " + e.message;
      e.hint = "start the peer first, or fix peers[].url / api_key in kevlaya.yaml";
      return e;
    }
    auto imported = profiles_from_models(peer, *body);
    if (!imported) return imported.error();
    if (auto st = add_imported(cfg, *imported); !st) return st;
    for (const auto& p : *imported) spdlog::info("peer {}: imported model {}", peer.url, names_in(p));
  }
  return ok_status();
}

}  // namespace kevlaya::remote
