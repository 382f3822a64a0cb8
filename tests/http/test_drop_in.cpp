// The door as a drop-in for llama-server (issue 46), over real sockets with the scripted child:
// `"model": null`, llama.cpp's router API (GET /models, POST /models/load and /models/unload),
// the liveness path, and CORS in llama-server's shape with the "localhost" keyword.
#include <catch2/catch.hpp>

#include "door_fixture.hpp"
#include "http/bodies.hpp"

using namespace kevlaya::test;

namespace {

// The router's status value of each model in a GET /models (or /v1/models) answer.
std::map<std::string, std::string> router_states(const json& list) {
  std::map<std::string, std::string> out;
  for (const auto& e : list["data"]) out[e["id"]] = e["status"]["value"];
  return out;
}

}  // namespace

TEST_CASE("drop-in: with one profile a null or unknown model resolves to it, and the child is sent its name",
          "[http]") {
  kevlaya::config::Config cfg;
  cfg.profiles.emplace_back().name = "kev";
  for (const char* body : {R"({"model":null,"prompt":"x"})", R"({"model":"gpt-3.5-turbo","prompt":"x"})"}) {
    INFO(body);
    auto call = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), body);
    REQUIRE(call.ok());
    CHECK(call->profile() == "kev");
    const auto sent = json::parse(kevlaya::http::child_body(*call, body, "kev", {}));
    CHECK(sent["model"] == "kev");
  }
}

TEST_CASE("drop-in: \"model\": null is an absent model, not 400 'must be a string'", "[http]") {
  Door door;
  auto r = http_request(door.port(), "POST", "/v1/chat/completions",
                        R"({"model":null,"messages":[{"role":"user","content":"hi"}]})");
  CHECK(r.status == 400);  // two profiles and no default_model: which one is unknowable
  const std::string msg = r.json_body()["error"]["message"];
  CHECK(msg.find("missing \"model\"") != std::string::npos);
  CHECK(msg.find("must be a string") == std::string::npos);
  CHECK(msg.find("laya") != std::string::npos);
}

TEST_CASE("router API: GET /models and /v1/models carry each model's status in the router's shape", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  for (const char* path : {"/models", "/v1/models"}) {
    INFO(path);
    auto r = http_request(door.port(), "GET", path);
    REQUIRE(r.status == 200);
    const auto j = r.json_body();
    CHECK(j["object"] == "list");
    CHECK(router_states(j) == std::map<std::string, std::string>{{"kev", "loaded"}, {"laya", "unloaded"}});
    for (const auto& e : j["data"]) {
      CHECK(e["object"] == "model");
      CHECK(e["created"].is_number_integer());
      CHECK(e["status"]["args"].is_array());
    }
  }
}

TEST_CASE("router API: POST /models/load and /models/unload take {\"model\"} and answer {\"success\": true}",
          "[http]") {
  Door door;
  auto load = http_request(door.port(), "POST", "/models/load", R"({"model":"laya"})");
  REQUIRE(load.status == 200);
  CHECK(load.json_body() == json{{"success", true}});
  CHECK(router_states(http_request(door.port(), "GET", "/models").json_body())["laya"] == "loaded");
  auto unload = http_request(door.port(), "POST", "/models/unload", R"({"model":"laya"})");
  REQUIRE(unload.status == 200);
  CHECK(unload.json_body() == json{{"success", true}});
  CHECK(router_states(http_request(door.port(), "GET", "/models").json_body())["laya"] == "unloaded");
  auto unknown = http_request(door.port(), "POST", "/models/load", R"({"model":"gpt-4"})");
  CHECK(unknown.status == 404);
  CHECK(unknown.json_body()["error"]["message"].get<std::string>().find("model is not found") != std::string::npos);
  CHECK(http_request(door.port(), "POST", "/models/load", R"({})").status == 400);
}

TEST_CASE("router API: /models/load and /models/unload need an admin key like /admin/load", "[http]") {
  DoorOptions o;
  o.api_keys = {"user-key"};
  o.admin_api_keys = {"admin-key"};
  Door door(o);
  const Headers user = {{"Authorization", "Bearer user-key"}}, admin = {{"Authorization", "Bearer admin-key"}};
  CHECK(http_request(door.port(), "POST", "/models/load", R"({"model":"kev"})").status == 401);
  CHECK(http_request(door.port(), "POST", "/models/load", R"({"model":"kev"})", user).status == 403);
  CHECK(http_request(door.port(), "POST", "/models/unload", R"({"model":"kev"})", user).status == 403);
  CHECK(http_request(door.port(), "POST", "/models/load", R"({"model":"kev"})", admin).status == 200);
  CHECK(http_request(door.port(), "GET", "/models", "", user).status == 200);
}

TEST_CASE("/livez and /v1/health answer 200 without a key", "[http]") {
  DoorOptions o;
  o.api_keys = {"sekret"};
  Door door(o);
  CHECK(http_request(door.port(), "GET", "/livez").json_body()["status"] == "ok");
  CHECK(http_request(door.port(), "GET", "/livez").status == 200);
  CHECK(http_request(door.port(), "GET", "/v1/health").status == 200);
}

TEST_CASE("CORS: the localhost keyword allows any loopback origin, and its preflight is llama-server's shape",
          "[http]") {
  DoorOptions o;
  o.allowed_origins = {"localhost"};
  Door door(o);
  for (const char* origin : {"http://localhost:5173", "http://127.0.0.1:8081", "https://[::1]:3000", "http://localhost"}) {
    INFO(origin);
    auto pre = http_request(door.port(), "OPTIONS", "/v1/chat/completions", "",
                            {{"Origin", origin}, {"Access-Control-Request-Method", "POST"},
                             {"Access-Control-Request-Headers", "content-type, x-stainless-os"}});
    CHECK(pre.status == 200);
    CHECK(pre.header("access-control-allow-origin") == origin);
    CHECK(pre.header("access-control-allow-methods") == "GET, POST");
    CHECK(pre.header("access-control-allow-headers") == "content-type, x-stainless-os");
    auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), {{"Origin", origin}});
    CHECK(r.status == 200);
    CHECK(r.header("access-control-allow-origin") == origin);
  }
  for (const char* origin : {"http://localhost.evil.example", "http://evil.example", "http://128.0.0.1:80", "null"}) {
    INFO(origin);
    auto pre = http_request(door.port(), "OPTIONS", "/v1/chat/completions", "",
                            {{"Origin", origin}, {"Access-Control-Request-Method", "POST"}});
    CHECK(pre.status == 200);  // llama-server's shape: a preflight without any CORS header
    CHECK(pre.header("access-control-allow-origin").empty());
    CHECK(pre.header("access-control-allow-methods").empty());
    CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), {{"Origin", origin}}).status ==
          403);
  }
}

TEST_CASE("CORS: '*' allows every origin with llama-server's own preflight answer", "[http]") {
  DoorOptions o;
  o.allowed_origins = {"*"};
  Door door(o);
  for (const char* origin : {"http://web.example.fr", "localhost", "null", "https://evil.example:8443"}) {
    INFO(origin);
    auto pre = http_request(door.port(), "OPTIONS", "/completions", "",
                            {{"Origin", origin}, {"Access-Control-Request-Method", "POST"},
                             {"Access-Control-Request-Headers", "Authorization"}});
    CHECK(pre.status == 200);
    CHECK(pre.header("access-control-allow-origin") == origin);
    CHECK(pre.header("access-control-allow-credentials") == "true");
    CHECK(pre.header("access-control-allow-methods") == "GET, POST, DELETE, OPTIONS");
    CHECK(pre.header("access-control-allow-headers") == "*");
    auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), {{"Origin", origin}});
    CHECK(r.status == 200);
    CHECK(r.header("access-control-allow-origin") == origin);
  }
}

TEST_CASE("tools: with tools off, /tools is a 404 that names the setting, after the key check", "[http]") {
  DoorOptions o;
  o.api_keys = {"k"};
  Door door(o);
  CHECK(http_request(door.port(), "GET", "/tools").status == 401);
  const auto r = http_request(door.port(), "GET", "/tools", "", {{"Authorization", "Bearer k"}});
  INFO(r.body);
  CHECK(r.status == 404);
  CHECK(r.body.find("tools.builtin") != std::string::npos);
}
