// Issue 32 item 6: with admin_api_keys set, /logs was admin-only but the children's log tails
// still reached ordinary keys (a 503's error.detail, /status failures[].log_tail, /events), and an
// ordinary key changed a shared child's state through /upstream/ (POST lora-adapters set every
// caller's adapter scales). Both are the admin keys' now; an open door keeps showing log tails.
#include <catch2/catch.hpp>

#include "door_fixture.hpp"

using namespace kevlaya::test;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;
const Headers kAgent = {{"Authorization", "Bearer agent-key"}}, kAdmin = {{"X-Api-Key", "admin-key"}};

DoorOptions keyed(bool broken = false) {
  DoorOptions o;
  o.api_keys = {"agent-key"};
  o.admin_api_keys = {"admin-key"};
  o.broken_profile = broken;
  return o;
}

bool has_log_line(const std::string& body) { return body.find(kBrokenLogLine) != std::string::npos; }

}  // namespace

TEST_CASE("log tails: with admin keys an ordinary key sees none (503 detail, /status, /events), and an admin key does",
          "[http]") {
  Door door(keyed(true));
  RawClient agent_events(door.port()), admin_events(door.port());
  agent_events.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer agent-key\r\n\r\n");
  admin_events.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: admin-key\r\n\r\n");
  REQUIRE(agent_events.read_until("retry:").find("retry:") != std::string::npos);
  REQUIRE(admin_events.read_until("retry:").find("retry:") != std::string::npos);

  const auto agent = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("broken"), kAgent);
  INFO(agent.body);
  CHECK(agent.status == 503);
  CHECK(agent.json_body()["error"]["message"].get<std::string>().find("out of memory") != std::string::npos);
  CHECK_FALSE(agent.json_body()["error"].contains("detail"));
  CHECK_FALSE(has_log_line(agent.body));
  const auto admin = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("broken"), kAdmin);
  CHECK(admin.status == 503);
  CHECK(has_log_line(admin.body));

  const auto agent_status = http_request(door.port(), "GET", "/status", "", kAgent);
  REQUIRE(agent_status.status == 200);
  CHECK(agent_status.json_body()["failures"].size() == 1);  // the failure itself is still shown
  CHECK_FALSE(has_log_line(agent_status.body));
  CHECK(has_log_line(http_request(door.port(), "GET", "/status", "", kAdmin).body));

  CHECK(has_log_line(admin_events.read_until(kBrokenLogLine)));
  const auto seen = agent_events.read_until("\"to\":\"failed\"");
  CHECK(seen.find("\"to\":\"failed\"") != std::string::npos);
  CHECK_FALSE(has_log_line(seen));
}

TEST_CASE("log tails: an open door (no keys) still shows them", "[http]") {
  DoorOptions o;
  o.broken_profile = true;
  Door door(o);
  const auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("broken"));
  CHECK(r.status == 503);
  CHECK(has_log_line(r.body));
  CHECK(has_log_line(http_request(door.port(), "GET", "/status").body));
}

TEST_CASE("admin keys: a child's state-changing endpoints under /upstream/ take only an admin key", "[http]") {
  Door door(keyed());
  // Spellings a child that decodes and normalises its path routes to the same endpoint.
  for (const char* target : {"/upstream/kev/lora-adapters", "/upstream/kev/slots/0?action=erase", "/upstream/kev/props",
                             "/upstream/kev/models/load", "/upstream/kev//lora-adapters", "/upstream/kev/./LORA-ADAPTERS",
                             "/upstream/kev/%6cora-adapters", "/upstream/kev/x/../slots/0?action=save"}) {
    INFO(target);
    const int before = door.upstream().requests.load();
    const auto refused = http_request(door.port(), "POST", target, R"({"id":0,"scale":1})", kAgent);
    CHECK(refused.status == 403);
    CHECK(refused.json_body()["error"]["code"] == "forbidden");
    CHECK(door.upstream().requests.load() == before);  // never reached the child
    CHECK(http_request(door.port(), "POST", target, R"({"id":0,"scale":1})", kAdmin).status == 200);
  }
  // Reading them, and the child's other endpoints, stay open to every key.
  CHECK(http_request(door.port(), "GET", "/upstream/kev/lora-adapters", "", kAgent).status == 200);
  CHECK(http_request(door.port(), "GET", "/upstream/kev/slots", "", kAgent).status == 200);
  CHECK(http_request(door.port(), "POST", "/upstream/kev/tokenize", R"({"content":"hi"})", kAgent).status == 200);
}

TEST_CASE("admin keys unset: /upstream/ admin endpoints follow api_keys as before", "[http]") {
  DoorOptions o;
  o.api_keys = {"agent-key"};
  Door door(o);
  CHECK(http_request(door.port(), "POST", "/upstream/kev/lora-adapters", "[]", kAgent).status == 200);
  CHECK(http_request(door.port(), "POST", "/upstream/kev/lora-adapters", "[]").status == 401);
}
