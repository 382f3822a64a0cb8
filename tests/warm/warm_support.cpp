#include "warm/warm_support.hpp"

#include "ledger/children.hpp"

#include <nlohmann/json.hpp>

namespace kevlaya::test {

config::Profile warm_profile(const std::string& name, const std::string& binary, const std::filesystem::path& model) {
  config::Profile p;
  p.name = name;
  p.binary = binary;
  p.model = model;
  p.ctx = 2048;
  p.ngl = 0;
  p.parallel = 1;
  p.health.first_probe_ms = 10;
  p.health.interval_ms = 20;
  p.health.startup_timeout_s = 60;
  p.health.stall_timeout_s = 60;
  p.stop.grace_s = 5;
  p.slot_cache.enabled = true;
  return p;
}

config::OrchestratorCfg warm_orch(const std::filesystem::path& dir, bool prefetch) {
  config::OrchestratorCfg o;
  o.state_dir = dir / "state";
  o.log_dir = dir / "logs";
  o.prefetch.enabled = prefetch;
  o.prefetch.min_available_mib = 0;
  return o;
}

std::string long_prompt(int n, const std::string& seed) {
  std::string s;
  for (int i = 0; i < n; ++i) s += seed + std::to_string(i) + " ";
  return s;
}

int prompt_n(asio::io_context& ioc, const upstream::Endpoint& ep, const std::string& prompt) {
  int n = -1;
  run_co(ioc, [&]() -> asio::awaitable<void> {
    upstream::Request req;
    req.method = "POST";
    req.target = "/completion";
    req.body = nlohmann::json{{"prompt", prompt}, {"n_predict", 2}, {"temperature", 0}}.dump();
    req.timeout = std::chrono::seconds(60);
    auto res = co_await upstream::fetch(ioc.get_executor(), ep, req);
    if (!res || res->status != 200) co_return;
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_object() && j.contains("timings")) n = j["timings"].value("prompt_n", -1);
  });
  return n;
}

supervisor::StartOutcome start(asio::io_context& ioc, supervisor::ProcessEffects& fx, const config::Profile& p) {
  supervisor::StartOutcome out;
  const auto child = ledger::lone_child(std::make_shared<const config::Profile>(p));
  run_co(ioc, [&]() -> asio::awaitable<void> { out = co_await fx.start(*child, [](supervisor::ChildFailure) {}); });
  return out;
}

supervisor::StopReport stop(asio::io_context& ioc, supervisor::ProcessEffects& fx, const std::string& name) {
  supervisor::StopReport rep;
  run_co(ioc, [&]() -> asio::awaitable<void> { rep = co_await fx.stop(name); });
  return rep;
}

}  // namespace kevlaya::test
