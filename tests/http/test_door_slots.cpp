// Slots no stranger can hold (issue 45, M2), on the in-process door: the key is checked on the
// header, so a request without a valid key is answered at once and its body never awaited; when
// every slot is taken, as many idle, silent or answered connections as needed make room for the
// new one, not one at a time.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

#include "door_fixture.hpp"

using namespace kevlaya::test;

namespace {

constexpr const char* kKey = "door-key";

// A POST header announcing `announced` body bytes, followed by only the first few of them.
std::string partial_post(const std::string& target, const std::string& auth = "") {
  return "POST " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + auth +
         "Content-Length: 100000\r\n\r\n{\"model\":";
}

// The JSON body of a raw response read to its end ("" when there is none).
json body_of(const std::string& raw) {
  const auto at = raw.find("\r\n\r\n");
  return at == std::string::npos ? json() : json::parse(raw.substr(at + 4), nullptr, false);
}

}  // namespace

TEST_CASE("slots: a request without a valid key gets its refusal from the header, its body never awaited",
          "[http]") {
  DoorOptions o;
  o.api_keys = {kKey};
  o.admin_api_keys = {"admin-key"};
  o.read_timeout_s = 30;  // what the body would have had to arrive in
  Door door(o);
  struct Case {
    const char* target;
    std::string auth;
    int status;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "", 401},
      {"/v1/chat/completions", "Authorization: Bearer wrong\r\n", 401},
      {"/v1/messages", "", 401},  // the refusal in the caller's shape (Anthropic)
      {"/api/chat", "X-Api-Key: wrong\r\n", 401},  // (Ollama)
      {"/admin/reload", "Authorization: Bearer " + std::string(kKey) + "\r\n", 403},
  };
  for (const auto& c : cases) {
    INFO(c.target << " " << c.auth);
    RawClient raw(door.port());
    raw.send(partial_post(c.target, c.auth));
    CHECK(raw.wait_closed(3s));  // answered and closed, not after read_timeout_s
    const auto& got = raw.received();
    CHECK(got.rfind("HTTP/1.1 " + std::to_string(c.status), 0) == 0);
    CHECK(got.find("Connection: close") != std::string::npos);
    if (c.status == 401) CHECK(got.find("WWW-Authenticate: Bearer") != std::string::npos);
    // The same refusal a whole request gets from the gate.
    Headers h;
    if (!c.auth.empty()) {
      const auto colon = c.auth.find(':');
      h.emplace_back(c.auth.substr(0, colon), c.auth.substr(colon + 2, c.auth.size() - colon - 4));
    }
    const auto whole = http_request(door.port(), "POST", c.target, chat_body("kev"), h);
    CHECK(whole.status == c.status);
    CHECK(body_of(got) == whole.json_body());
  }
  CHECK(door.upstream().requests == 0);
}

TEST_CASE("slots: keyless partial-body connections holding every slot and the reserve make room for a keyed call at once",
          "[http]") {
  DoorOptions o;
  o.api_keys = {kKey};
  o.max_connections = 8;
  o.reserved_connections = 4;
  Door door(o);
  std::vector<std::unique_ptr<RawClient>> strangers;
  for (int i = 0; i < o.max_connections + o.reserved_connections; ++i) {
    strangers.push_back(std::make_unique<RawClient>(door.port()));
    strangers.back()->send(partial_post("/v1/chat/completions"));
    REQUIRE(strangers.back()->read_until("\r\n\r\n", 3s).rfind("HTTP/1.1 401", 0) == 0);
  }
  // Within the second their answered connections drain: they make room first, whatever their age.
  for (int i = 0; i < 3; ++i) {
    const auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                                {{"Authorization", std::string("Bearer ") + kKey}}, 5s);
    INFO(r.body);
    CHECK(r.status == 200);
  }
}

TEST_CASE("slots: silent connections holding every slot and the reserve make room for a full slot, not one at a time",
          "[http]") {
  DoorOptions o;
  o.api_keys = {kKey};
  o.max_connections = 8;
  o.reserved_connections = 4;
  Door door(o);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < o.max_connections + o.reserved_connections; ++i)
    silent.push_back(std::make_unique<RawClient>(door.port()));
  std::this_thread::sleep_for(1500ms);  // older than the 1 s an idle connection keeps its slot
  // Closing one to make room left the new connection in the reserve: 503 for a model call.
  for (int i = 0; i < 3; ++i) {
    const auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                                {{"Authorization", std::string("Bearer ") + kKey}}, 5s);
    INFO(r.body);
    CHECK(r.status == 200);
  }
}
