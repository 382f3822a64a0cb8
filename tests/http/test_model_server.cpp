// The door as a model server of the Gateway API Inference Extension (docs/scale-out.md): the
// picker's node gauges on /metrics (waiting with calls parked for a switch, running, KV use, the
// resident models in the LoRA-info shape) and GET /readyz, which says which models serve without
// a switch.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "http/model_server.hpp"
#include "support/http_client.hpp"
#include "door_fixture.hpp"

// A named namespace: its using-directives stay in this file in the unity build (KEVLAYA_UNITY).
namespace model_server_test {

using namespace kevlaya;
using namespace kevlaya::http;
using namespace kevlaya::test;

namespace {

config::Config two_models(config::Residency residency) {
  config::Config cfg;
  config::Profile kev;
  kev.name = "kev";
  kev.alias = {"k"};
  config::Profile laya;
  laya.name = "laya";
  cfg.profiles = {kev, laya};
  cfg.orch.residency = residency;
  return cfg;
}

supervisor::ProfileStatus status(const std::string& name, supervisor::Phase phase, int in_flight = 0, int queued = 0) {
  supervisor::ProfileStatus p;
  p.name = name;
  p.state = phase;
  p.in_flight = in_flight;
  p.queued = queued;
  return p;
}

// kev (alias k) ready with two calls running, laya stopped with one call parked for the switch.
supervisor::Snapshot kev_resident_laya_parked() {
  supervisor::Snapshot snap;
  snap.profiles = {status("kev", supervisor::Phase::ready, 2), status("laya", supervisor::Phase::stopped, 0, 1)};
  snap.queued = 1;
  return snap;
}

std::string sample_line(const std::string& text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
    if (at == 0 || text[at - 1] == '\n') return text.substr(at, text.find('\n', at) - at);
  return {};
}

}  // namespace

TEST_CASE("model server: resident models and the ones parked for a switch are the picker's adapters", "[http][k8s]") {
  const auto cfg = two_models(config::Residency::rotate);
  const auto r = residency_of(cfg, kev_resident_laya_parked());
  CHECK(r.running == std::vector<std::string>{"kev", "k"});  // aliases: the picker matches the request's name
  CHECK(r.waiting == std::vector<std::string>{"laya"});
  CHECK(r.max_models == 2);  // full: anything else would need a switch

  supervisor::Snapshot idle;
  idle.profiles = {status("kev", supervisor::Phase::stopped), status("laya", supervisor::Phase::stopped)};
  const auto empty = residency_of(cfg, idle);
  CHECK(empty.running.empty());
  CHECK(empty.waiting.empty());
  CHECK(empty.max_models == 1);  // room for one: the affinity scorer's "can load" score

  const auto co = residency_of(two_models(config::Residency::co_resident), kev_resident_laya_parked());
  CHECK(co.max_models == 3);  // every name fits beside the others
}

TEST_CASE("model server: KV use comes from the ready children's /slots, 0 to 1", "[http][k8s]") {
  const std::string a =
      R"([{"id":0,"n_ctx":100,"is_processing":true,"n_prompt_tokens":30,"next_token":{"n_decoded":20}},)"
      R"({"id":1,"n_ctx":100,"is_processing":false}])";
  CHECK(kv_usage_from_slots({a}) == Approx(0.25));
  const std::string newer = R"([{"id":0,"n_ctx":200,"is_processing":true,"next_token":[{"n_decoded":50}]}])";
  CHECK(kv_usage_from_slots({newer}) == Approx(0.25));
  // A processing slot without token counts holds its whole context; a body that is no slot list is skipped.
  const std::string bare = R"([{"id":0,"n_ctx":100,"is_processing":true}])";
  CHECK(kv_usage_from_slots({bare, R"({"echo":{}})", "not json"}) == Approx(1.0));
  CHECK(kv_usage_from_slots({a, bare}) == Approx(150.0 / 300.0));
  CHECK(kv_usage_from_slots({}) == 0.0);
}

TEST_CASE("model server: the node gauges use names and the LoRA-info shape the EPP maps", "[http][k8s]") {
  Metrics m;
  describe_model_server_metrics(m);
  const auto cfg = two_models(config::Residency::rotate);
  const auto snap = kev_resident_laya_parked();
  set_model_server_metrics(m, cfg, snap, 0, 0.5, 1700000000.7);
  const auto text = m.render();
  CHECK(sample_line(text, "kevlaya_requests_waiting") == "kevlaya_requests_waiting 1");  // the parked call
  CHECK(sample_line(text, "kevlaya_requests_running") == "kevlaya_requests_running 2");
  CHECK(sample_line(text, "kevlaya_kv_cache_usage_ratio") == "kevlaya_kv_cache_usage_ratio 0.5");
  CHECK(sample_line(text, "kevlaya_resident_models_info") ==
        R"(kevlaya_resident_models_info{running_lora_adapters="kev,k",waiting_lora_adapters="laya",max_lora="2"} 1700000000)");
  CHECK(text.find("# TYPE kevlaya_resident_models_info gauge") != std::string::npos);
  // The door's own wait count wins when the supervisor has not seen its calls yet; one series only.
  set_model_server_metrics(m, cfg, snap, 3, 0.5, 1700000001);
  const auto again = m.render();
  CHECK(sample_line(again, "kevlaya_requests_waiting") == "kevlaya_requests_waiting 3");
  CHECK(count_of(again, "\nkevlaya_resident_models_info{") == 1);
}

TEST_CASE("readyz: 200 only for a model served without a switch, 503 while not ready", "[http][k8s]") {
  const auto cfg = two_models(config::Residency::rotate);
  const auto snap = kev_resident_laya_parked();
  const auto plain = readiness_reply(cfg, snap, "", true);
  CHECK(plain.status == 200);
  const auto body = nlohmann::json::parse(plain.body);
  CHECK(body["resident"] == nlohmann::json({"kev", "k"}));
  CHECK(body["waiting"] == nlohmann::json({"laya"}));
  CHECK(readiness_reply(cfg, snap, "model=kev", true).status == 200);
  const auto alias = readiness_reply(cfg, snap, "model=k", true);
  CHECK(alias.status == 200);
  CHECK(nlohmann::json::parse(alias.body)["model"] == "kev");
  const auto laya = readiness_reply(cfg, snap, "model=laya", true);
  CHECK(laya.status == 503);
  CHECK(nlohmann::json::parse(laya.body)["status"] == "needs_switch");
  CHECK(readiness_reply(cfg, snap, "model=nope", true).status == 404);
  CHECK(readiness_reply(cfg, snap, "", false).status == 503);      // draining, or preload not done
  CHECK(readiness_reply(cfg, snap, "model=kev", false).status == 503);
}

TEST_CASE("door: /readyz and the node gauges follow a switch, a parked call counts as waiting", "[http][k8s]") {
  test::Door door;
  CHECK(http_get(door.port(), "/readyz").status == 200);
  CHECK(http_get(door.port(), "/readyz?model=kev").status == 503);  // nothing loaded yet
  auto held = std::async(std::launch::async, [&] {
    return http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "hold"));
  });
  REQUIRE(door.upstream().wait_held(1));
  CHECK(http_get(door.port(), "/readyz?model=kev").status == 200);
  CHECK(http_get(door.port(), "/readyz?model=laya").status == 503);
  auto parked = std::async(std::launch::async, [&] {
    return http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya"));
  });
  std::string metrics;
  // Bounded: the laya call is counted waiting by the door first, then reaches the supervisor's queue.
  for (int i = 0; i < 200; ++i) {
    metrics = http_get(door.port(), "/metrics").body;
    if (sample_line(metrics, "kevlaya_requests_waiting") == "kevlaya_requests_waiting 1" &&
        metrics.find(R"(waiting_lora_adapters="laya")") != std::string::npos)
      break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(sample_line(metrics, "kevlaya_requests_waiting") == "kevlaya_requests_waiting 1");
  CHECK(sample_line(metrics, "kevlaya_requests_running") == "kevlaya_requests_running 1");
  // (kev may be draining by now: the switch to laya is due, so only laya's side is fixed.)
  CHECK(metrics.find(R"(waiting_lora_adapters="laya")") != std::string::npos);
  door.upstream().release_hold();
  CHECK(held.get().status == 200);
  CHECK(parked.get().status == 200);
  CHECK(http_get(door.port(), "/readyz?model=laya").status == 200);  // switched: laya now serves at once
  CHECK(http_get(door.port(), "/readyz?model=kev").status == 503);
}

}  // namespace model_server_test
