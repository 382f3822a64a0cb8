// keep_alive as Ollama clients send it (docs/lifecycle.md): seconds, Go durations, -1, 0.
#include <catch2/catch.hpp>

#include "http/bodies.hpp"

using kevlaya::http::parse_keep_alive;
using nlohmann::json;

namespace {

std::optional<std::int64_t> secs(const json& v) {
  auto r = parse_keep_alive(v);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("keep_alive: numbers, durations, forever and zero") {
  CHECK(secs(300) == 300);
  CHECK(secs(0) == 0);
  CHECK(secs(-1) == -1);
  CHECK(secs(-5) == -1);
  CHECK(secs(1.2) == 2);  // sub-second parts round up
  CHECK(secs("5m") == 300);
  CHECK(secs("1h30m") == 5400);
  CHECK(secs("90s") == 90);
  CHECK(secs("500ms") == 1);
  CHECK(secs("0") == 0);
  CHECK(secs("-1") == -1);
  CHECK(secs("-1m") == -1);
  CHECK(secs("300") == 300);
  CHECK_FALSE(secs(json(nullptr)));
}

TEST_CASE("keep_alive: anything else is a 400 naming the field") {
  for (const json& bad : {json("5 minutes"), json("m"), json(""), json("1x"), json(true), json::array(), json("1h5")}) {
    auto r = parse_keep_alive(bad);
    INFO(bad.dump());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == kevlaya::Errc::bad_request);
    CHECK(r.error().message.find("keep_alive") != std::string::npos);
  }
}

TEST_CASE("keep_alive: a number that is not one whole number is refused, not read as its prefix") {
  // Before: "." was taken as 0 s and "1.2.3s" as 1.2 s (strtod read what it could).
  for (const char* bad : {".", "1.2.3s", "1.2.3", "..5m", "1..5s", "-.", "5m.", "."}) {
    INFO(bad);
    auto r = parse_keep_alive(json(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == kevlaya::Errc::bad_request);
    CHECK(r.error().message.find("keep_alive") != std::string::npos);
  }
  CHECK(secs("1.5s") == 2);
  CHECK(secs(".5m") == 30);
  CHECK(secs("2.s") == 2);
}

TEST_CASE("keep_alive: the door's field is parsed from a model call and not sent to the child") {
  kevlaya::config::Config cfg;
  kevlaya::config::Profile p;
  p.name = "kev";
  cfg.profiles.push_back(p);
  const std::string body = R"({"model":"kev","keep_alive":"5m","messages":[]})";
  auto call = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), body);
  REQUIRE(call.ok());
  CHECK(call->keep_alive_s == 300);
  const auto sent = json::parse(kevlaya::http::child_body(*call, body, "kev", {}));
  CHECK_FALSE(sent.contains("keep_alive"));
  CHECK(sent["model"] == "kev");
  auto bad = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), R"({"model":"kev","keep_alive":"soon"})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == kevlaya::Errc::bad_request);
}

TEST_CASE("child body: a rewritten body keeps the caller's member order (a schema's property order is the grammar's)") {
  kevlaya::config::Config cfg;
  kevlaya::config::Profile p;
  p.name = "kev";
  p.alias = {"kev-alias"};
  cfg.profiles.push_back(p);
  const std::string body = R"({"model":"kev-alias","keep_alive":60,"response_format":{"type":"json_schema",)"
                           R"("json_schema":{"schema":{"properties":{"zeta":{},"alpha":{}}}}},"messages":[]})";
  auto call = kevlaya::http::parse_model_call(std::make_shared<const kevlaya::config::Config>(cfg), body);
  REQUIRE(call.ok());
  const auto sent = kevlaya::http::child_body(*call, body, "kev", {{0, 1.0}});
  CHECK(sent.find("\"zeta\"") < sent.find("\"alpha\""));
  CHECK(sent.find("\"response_format\"") < sent.find("\"messages\""));
  const auto j = json::parse(sent);
  CHECK(j["model"] == "kev");
  CHECK(j["lora"].size() == 1);
  CHECK_FALSE(j.contains("keep_alive"));
}

// Issue 35: a model call is resolved once, and keeps the configuration it was resolved in (the
// door reads loading_messages and health timeouts from it, whatever a reload does meanwhile).
TEST_CASE("model call: resolved once, in the configuration it keeps") {
  kevlaya::config::Config cfg;
  kevlaya::config::Profile kev, laya;
  kev.name = "kev";
  laya.name = "laya";
  laya.alias = {"verifier"};
  cfg.profiles = {kev, laya};
  auto shared = std::make_shared<const kevlaya::config::Config>(cfg);
  const std::weak_ptr<const kevlaya::config::Config> seen = shared;
  auto call = kevlaya::http::parse_model_call(shared, R"({"model":"verifier","messages":[]})");
  REQUIRE(call.ok());
  CHECK(call->cfg == shared);
  CHECK(call->prof == &shared->profiles[1]);
  shared.reset();  // a reload: the door drops the version, the call keeps it
  CHECK_FALSE(seen.expired());
  CHECK(call->profile() == "laya");
  CHECK(call->requested == "verifier");
}
