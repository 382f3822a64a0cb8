// REST door over real loopback sockets: routes, headers, the error boundary, auth and limits.
#include <catch2/catch.hpp>

#include <future>

#include "door_fixture.hpp"

using namespace kevlaya::test;

TEST_CASE("chat completion is routed by model and carries the X-Kevlaya headers", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"));
  REQUIRE(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "kev");
  CHECK_FALSE(r.header("x-kevlaya-queue-ms").empty());
  CHECK_FALSE(r.header("x-kevlaya-swap-ms").empty());
  auto j = r.json_body();
  CHECK(j["choices"][0]["message"]["content"] == "hello");
  CHECK(j["target"] == "/v1/chat/completions");
  CHECK(j["echo"]["messages"][0]["content"] == "hi");  // body forwarded
}

TEST_CASE("an alias is resolved and the forwarded model names the profile", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/v1/completions", R"({"model":"k","prompt":"x"})");
  REQUIRE(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "kev");
  CHECK(r.json_body()["echo"]["model"] == "kev");
  CHECK(r.json_body()["target"] == "/v1/completions");
}

TEST_CASE("llama-server /completion is routed too", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/completion", R"({"model":"laya","prompt":"x"})");
  REQUIRE(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "laya");
  CHECK(r.json_body()["target"] == "/completion");
}

TEST_CASE("error boundary: malformed JSON is 400, unknown model 404 listing known ones", "[http]") {
  Door door;
  auto bad = http_request(door.port(), "POST", "/v1/chat/completions", "{not json");
  CHECK(bad.status == 400);
  CHECK(bad.json_body()["error"]["src"] == "kevlaya");
  CHECK(bad.json_body()["error"]["code"] == "bad_request");
  auto unknown = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("gpt-4"));
  CHECK(unknown.status == 404);
  const std::string msg = unknown.json_body()["error"]["message"];
  CHECK(msg.find("gpt-4") != std::string::npos);
  CHECK(msg.find("kev") != std::string::npos);
  CHECK(msg.find("laya") != std::string::npos);
  auto missing = http_request(door.port(), "POST", "/v1/chat/completions", R"({"messages":[]})");
  CHECK(missing.status == 400);
  auto route = http_request(door.port(), "GET", "/nope");
  CHECK(route.status == 404);
}

TEST_CASE("upstream error responses pass through with src upstream", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "error"));
  CHECK(r.status == 400);
  auto e = r.json_body()["error"];
  CHECK(e["src"] == "upstream");
  CHECK(e["message"] == "bad thing");
  CHECK(r.header("x-kevlaya-model") == "kev");
}

TEST_CASE("a child that dies under a request answers 502 child_crashed", "[http]") {
  Door door;
  auto& up = door.upstream();
  up.on_crash = [&] {
    door.report_crash("kev");
    // Wait until the supervisor has seen the death, so the door's lease is marked crashed.
    for (int i = 0; i < 500 && door.snapshot().profiles.at(0).crashes == 0; ++i)
      std::this_thread::yield();
  };
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "crash"));
  CHECK(r.status == 502);
  CHECK(r.json_body()["error"]["code"] == "child_crashed");
}

TEST_CASE("a profile that cannot start answers 503 and /v1/models shows why", "[http]") {
  DoorOptions o;
  o.broken_profile = true;
  Door door(o);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("broken"));
  CHECK(r.status == 503);
  CHECK(r.json_body()["error"]["message"].get<std::string>().find("out of memory") != std::string::npos);
  auto m = http_request(door.port(), "GET", "/v1/models").json_body();
  bool seen = false;
  for (const auto& e : m["data"])
    if (e["id"] == "broken") {
      seen = true;
      CHECK(e["kevlaya"]["state"] != "ready");
    }
  CHECK(seen);
}

TEST_CASE("a request waiting past queue.max_wait_s gets 504", "[http]") {
  DoorOptions o;
  o.load_ms = 3000;
  o.max_wait_s = 1;
  Door door(o);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"));
  CHECK(r.status == 504);
  CHECK(r.json_body()["error"]["code"] == "timeout");
}

TEST_CASE("/v1/models lists each profile once, with every name it answers to, its tags and state", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  auto j = http_request(door.port(), "GET", "/v1/models").json_body();
  CHECK(j["object"] == "list");
  std::map<std::string, std::string> states;
  for (const auto& e : j["data"]) states[e["id"]] = e["kevlaya"]["state"];
  CHECK(states.size() == 2);  // the alias "k" is not a model of its own
  CHECK(states.at("kev") == "ready");
  CHECK(states.at("laya") == "stopped");
  CHECK(j["data"][0]["aliases"] == json::array({"kev", "k"}));  // as llama-server lists its --alias names
  CHECK(j["data"][0]["tags"] == json::array());
  CHECK(j["data"][0]["created"].is_number_integer());
}

TEST_CASE("/v1/models/{id} answers the profile an id or alias names, 404 otherwise", "[http]") {
  Door door;
  auto r = http_request(door.port(), "GET", "/v1/models/k");
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["id"] == "kev");
  CHECK(r.json_body()["kevlaya"]["state"] == "stopped");
  auto missing = http_request(door.port(), "GET", "/v1/models/nope");
  CHECK(missing.status == 404);
  CHECK(missing.json_body()["error"]["message"].get<std::string>().find("known models") != std::string::npos);
}

TEST_CASE("/health is open, /status reports resident model and switches", "[http]") {
  DoorOptions o;
  o.api_keys = {"sekret"};
  Door door(o);
  CHECK(http_request(door.port(), "GET", "/health").status == 200);
  const std::vector<std::pair<std::string, std::string>> auth = {{"Authorization", "Bearer sekret"}};
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya"), auth).status == 200);
  auto s = http_request(door.port(), "GET", "/status", "", auth);
  REQUIRE(s.status == 200);
  auto j = s.json_body();
  CHECK(j["resident"] == nlohmann::json::array({"laya"}));
  CHECK(j["recent_switches"].size() >= 1);
  CHECK(j["recent_switches"].back()["to"] == "laya");
  CHECK(j["recent_switches"].back()["phases_ms"].contains("total"));
  CHECK(j["uptime_s"].get<double>() >= 0);
}

TEST_CASE("API keys: Bearer or X-Api-Key, 401 otherwise", "[http]") {
  DoorOptions o;
  o.api_keys = {"k1", "sekret"};
  Door door(o);
  auto none = http_request(door.port(), "GET", "/v1/models");
  CHECK(none.status == 401);
  CHECK(none.json_body()["error"]["code"] == "unauthorized");
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Authorization", "Bearer wrong"}}).status == 401);
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"Authorization", "Bearer sekret"}}).status == 200);
  CHECK(http_request(door.port(), "GET", "/v1/models", "", {{"X-Api-Key", "k1"}}).status == 200);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 401);
}

// admin_api_keys: an agent's key calls models but cannot unload them, reload the config or read
// the children's logs; an admin key can do all of it (docs/security.md, "API keys").
TEST_CASE("admin keys: /admin and /logs take only an admin key (403 for an ordinary one), which works everywhere", "[http]") {
  DoorOptions o;
  o.api_keys = {"agent-key"};
  o.admin_api_keys = {"admin-key"};
  Door door(o);
  const std::vector<std::pair<std::string, std::string>> agent = {{"Authorization", "Bearer agent-key"}},
                                                         admin = {{"X-Api-Key", "admin-key"}};
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), agent).status == 200);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya"), admin).status == 200);
  CHECK(http_request(door.port(), "GET", "/status", "", agent).status == 200);
  for (const char* target : {"/admin/unload", "/admin/unload/kev", "/admin/load/kev", "/admin/reload"}) {
    INFO(target);
    const auto refused = http_request(door.port(), "POST", target, "", agent);
    CHECK(refused.status == 403);
    CHECK(refused.json_body()["error"]["message"] ==
          "this key may call models but not /admin, /logs, POST /tools or a child's admin endpoints under /upstream/");
    CHECK(http_request(door.port(), "POST", target, "", {{"Authorization", "Bearer wrong"}}).status == 401);
    CHECK(http_request(door.port(), "POST", target).status == 401);
  }
  CHECK(http_request(door.port(), "GET", "/logs/kev", "", agent).status == 403);
  CHECK(http_request(door.port(), "GET", "/logs/kev", "", admin).status != 403);
  REQUIRE(http_request(door.port(), "POST", "/admin/unload", "", admin).status == 200);
  for (const auto& p : door.snapshot().profiles) CHECK(p.state != kevlaya::supervisor::Phase::ready);
}

TEST_CASE("admin keys without api_keys: model calls stay open, /admin needs the admin key", "[http]") {
  DoorOptions o;
  o.admin_api_keys = {"admin-key"};
  Door door(o);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  CHECK(http_request(door.port(), "POST", "/admin/unload").status == 401);
  CHECK(http_request(door.port(), "POST", "/admin/unload", "", {{"Authorization", "Bearer admin-key"}}).status == 200);
}

TEST_CASE("admin load makes a model resident, unload stops it", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/admin/load/laya");
  REQUIRE(r.status == 200);
  auto snap = door.snapshot();
  bool laya_ready = false;
  for (const auto& p : snap.profiles)
    if (p.name == "laya") laya_ready = p.state == kevlaya::supervisor::Phase::ready;
  CHECK(laya_ready);
  CHECK(http_request(door.port(), "POST", "/admin/load/nobody").status == 404);
  REQUIRE(http_request(door.port(), "POST", "/admin/unload").status == 200);
  for (const auto& p : door.snapshot().profiles) CHECK(p.state != kevlaya::supervisor::Phase::ready);
}

TEST_CASE("queue full at the door answers 429 with Retry-After", "[http]") {
  DoorOptions o;
  o.max_depth = 2;
  Door door(o);
  auto& up = door.upstream();
  // One request holds kev's only slot; two more wait at the door; the fourth is refused.
  auto busy = std::async(std::launch::async, [&] {
    return http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "hold"));
  });
  REQUIRE(up.wait_held(1));
  std::vector<std::future<HttpReply>> waiting;
  for (int i = 0; i < 2; ++i)
    waiting.push_back(std::async(std::launch::async, [&] {
      return http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"));
    }));
  // Wait until the door counts both as queued.
  for (int i = 0; i < 2000; ++i) {
    auto st = http_request(door.port(), "GET", "/status").json_body();
    if (st["queue"]["door_waiting"] == 2) break;
  }
  auto refused = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"));
  CHECK(refused.status == 429);
  CHECK(refused.json_body()["error"]["code"] == "queue_full");
  CHECK(std::stoi(refused.header("retry-after")) >= 1);
  up.release_hold();
  CHECK(busy.get().status == 200);
  for (auto& w : waiting) CHECK(w.get().status == 200);
}

TEST_CASE("a request arriving during a swap waits and succeeds", "[http]") {
  DoorOptions o;
  o.load_ms = 400;
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya"));
  REQUIRE(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "laya");
  CHECK(std::stoi(r.header("x-kevlaya-swap-ms")) >= 300);
  CHECK(std::stoi(r.header("x-kevlaya-queue-ms")) >= std::stoi(r.header("x-kevlaya-swap-ms")));
}
