// In-flight requests: GET /requests and an admin's cancel (docs/http.md "In-flight requests").
#include <catch2/catch.hpp>

#include <future>

#include "door_fixture.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// The one request GET /requests lists once it reaches `phase`; null after a bounded wait.
json listed(std::uint16_t port, const std::string& phase, const std::string& key = "") {
  json found;
  eventually([&] {
    const auto list = http_request(port, "GET", "/requests", "", {{"Authorization", "Bearer " + key}}).json_body();
    for (const auto& r : list.value("requests", json::array()))
      if (r["phase"] == phase) found = r;
    return !found.is_null();
  });
  return found;
}

HttpReply cancel(std::uint16_t port, const std::string& id, const std::string& key = "admin-key") {
  return http_request(port, "POST", "/admin/requests/" + id + "/cancel", "", {{"Authorization", "Bearer " + key}});
}

DoorOptions with_admin() {
  DoorOptions o;
  o.api_keys = {"user-key"};
  o.admin_api_keys = {"admin-key"};
  return o;
}

}  // namespace

TEST_CASE("GET /requests lists a call in progress with its phase, model and client", "[http][activity]") {
  Door door;
  auto call = std::async(std::launch::async, [&] {
    return http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "hold"),
                        {{"X-Session-ID", "agent-1"}});
  });
  REQUIRE(door.upstream().wait_held(1));
  const auto r = listed(door.port(), "generating");
  REQUIRE(r.is_object());
  CHECK(r["model"] == "kev");
  CHECK(r["api"] == "openai");
  CHECK(r["client"] == "127.0.0.1");
  CHECK(r["session"] == "agent-1");
  CHECK(r["elapsed_ms"].get<std::int64_t>() >= 0);
  door.upstream().release_hold();
  CHECK(call.get().status == 200);
  CHECK(eventually([&] { return http_request(door.port(), "GET", "/requests").json_body()["requests"].empty(); }));
}

TEST_CASE("an admin's cancel stops a streamed generation and the client gets a cancelled error", "[http][activity]") {
  Door door(with_admin());
  RawClient c(door.port());
  auto body = chat_body("kev", "stream_hold", true);
  auto bytes = post("/v1/chat/completions", body);
  bytes.insert(bytes.find("\r\n\r\n"), "\r\nAuthorization: Bearer user-key");
  c.send(bytes);
  REQUIRE(c.read_until("chunk-1").find("chunk-1") != std::string::npos);
  const auto r = listed(door.port(), "generating", "user-key");
  REQUIRE(r.is_object());
  const auto id = r["id"].dump();
  CHECK(cancel(door.port(), id, "user-key").status == 403);  // admin keys only
  auto done = cancel(door.port(), id);
  CHECK(done.status == 200);
  CHECK(done.json_body()["cancelled"] == r["id"]);
  CHECK(door.upstream().saw_disconnect.wait(10s));  // the child's connection closed: generation stops
  const auto rest = c.read_until("\r\n0\r\n");
  CHECK(rest.find("\"code\":\"cancelled\"") != std::string::npos);
  CHECK(rest.find("cancelled by an administrator") != std::string::npos);
  CHECK(eventually([&] { return cancel(door.port(), id).status == 404; }));  // it is gone
}

TEST_CASE("a cancelled call answers in its API's shape and is recorded as cancelled", "[http][activity]") {
  TempDir dir("in-flight-cancel");
  DoorOptions o;
  o.state_dir = dir.path();
  Door door(o);
  auto call = std::async(std::launch::async, [&] {
    return http_request(door.port(), "POST", "/v1/messages",
                        R"({"model":"kev","max_tokens":8,"test_mode":"hold","messages":[{"role":"user","content":"hi"}]})");
  });
  REQUIRE(door.upstream().wait_held(1));
  const auto r = listed(door.port(), "generating");
  REQUIRE(r.is_object());
  CHECK(r["api"] == "anthropic");
  REQUIRE(cancel(door.port(), r["id"].dump(), "").status == 200);
  const auto answer = call.get();
  CHECK(answer.status == 410);
  CHECK(answer.json_body()["type"] == "error");
  CHECK(answer.json_body()["error"]["message"].get<std::string>().find("cancelled") != std::string::npos);
  door.upstream().release_hold();
  json rows;
  eventually([&] {
    rows = http_request(door.port(), "GET", "/activity").json_body()["records"];
    return rows.size() == 1;
  });
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["status"] == 410);
  CHECK(rows[0]["error"] == "cancelled");
}

TEST_CASE("cancelling a request that is not in progress is a 404", "[http][activity]") {
  Door door;
  CHECK(http_request(door.port(), "POST", "/admin/requests/12345/cancel").status == 404);
  CHECK(http_request(door.port(), "POST", "/admin/requests/abc/cancel").status == 404);
}
