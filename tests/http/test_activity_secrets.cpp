// The request history over real sockets against hostile or careless input: credential headers
// never stored (history, CSV, captures) even when configured as session headers (the loader refuses them; this is the door's
// own guard), a damaged file repaired at start, a file that fails under a query (503, shown in
// /status), an overflowing time filter (docs/security.md, docs/reliability.md).
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "common/credentials.hpp"
#include "door_fixture.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

json records(std::uint16_t port, std::size_t n) {
  json rows = json::array();
  eventually([&] {
    auto r = http_request(port, "GET", "/activity");
    rows = r.status == 200 ? r.json_body()["records"] : json::array();
    return rows.size() >= n;
  });
  return rows;
}

std::string file_bytes(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec) ? read_text(p) : std::string();
}

const std::vector<std::string> kCredentialHeaders = {
    "Authorization", "Proxy-Authorization", "Cookie",       "X-Api-Key",           "Api-Key",
    "X-Goog-Api-Key", "X-Auth-Token",       "X-Amz-Security-Token", "Ocp-Apim-Subscription-Key"};

}  // namespace

TEST_CASE("no credential header's value reaches activity.db, /activity, its CSV or a capture", "[http][activity]") {
  TempDir dir("door-activity-secrets");
  DoorOptions o;
  o.state_dir = dir.path();
  o.capture.enabled = true;  // (no keys: an open door reads its captures)
  o.activity.session_headers = kCredentialHeaders;  // what the loader refuses: the door must not record them either
  o.activity.session_headers.push_back("X-Session-ID");
  Door door(o);
  Headers headers = {{"X-Session-ID", "session-ok"}, {"User-Agent", "agent/1"}};
  for (const auto& h : kCredentialHeaders) {
    REQUIRE(kevlaya::is_credential_header(h));
    headers.emplace_back(h, "MARKER7f3a-" + h);
  }
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"), headers).status == 200);
  const auto rows = records(door.port(), 1);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["session"] == "session-ok");  // the first configured header that is not a credential
  const auto page = http_request(door.port(), "GET", "/activity");
  const auto csv = http_request(door.port(), "GET", "/activity?format=csv");
  REQUIRE(csv.status == 200);
  CHECK(page.body.find("MARKER7f3a") == std::string::npos);
  CHECK(csv.body.find("MARKER7f3a") == std::string::npos);
  for (const char* f : {"activity.db", "activity.db-wal"}) {
    INFO(f);
    CHECK(file_bytes(dir / f).find("MARKER7f3a") == std::string::npos);
  }
  // The capture keeps every credential header's name, never its value.
  REQUIRE(rows[0]["capture"].is_string());
  const auto cap = http_request(door.port(), "GET", "/admin/captures/" + rows[0]["capture"].get<std::string>());
  REQUIRE(cap.status == 200);
  CHECK(cap.body.find("MARKER7f3a") == std::string::npos);
  CHECK(cap.body.find("[redacted]") != std::string::npos);
  CHECK(cap.body.find("X-Goog-Api-Key") != std::string::npos);
}

TEST_CASE("a garbage activity.db is moved aside at start, said in /status, and history goes on", "[http][activity]") {
  TempDir dir("door-activity-garbage");
  write_text(dir / "activity.db", std::string(8192, 'G'));
  DoorOptions o;
  o.state_dir = dir.path();
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  CHECK(records(door.port(), 1).size() == 1);
  const auto st = http_request(door.port(), "GET", "/status").json_body()["activity"];
  INFO(st.dump());
  CHECK(st["error"].is_null());
  CHECK(st["repaired"].get<std::string>().find("moved aside") != std::string::npos);
}

TEST_CASE("a history file that fails under a query answers 503 in the API shape and /status says why",
          "[http][activity]") {
  TempDir dir("door-activity-broken-query");
  DoorOptions o;
  o.state_dir = dir.path();
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  REQUIRE(records(door.port(), 1).size() == 1);
  sqlite3* db = nullptr;  // another program replaces the table under the open history
  REQUIRE(sqlite3_open((dir / "activity.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE requests; CREATE TABLE requests(id INTEGER PRIMARY KEY)", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const auto r = http_request(door.port(), "GET", "/activity");
  INFO(r.body);
  CHECK(r.status == 503);
  CHECK(r.json_body()["error"]["message"].get<std::string>().find("no such column") != std::string::npos);
  const auto st = http_request(door.port(), "GET", "/status").json_body()["activity"];
  INFO(st.dump());
  REQUIRE(st["error"].is_string());
  CHECK(st["error"].get<std::string>().find("not an error") == std::string::npos);
  CHECK(st["error"].get<std::string>().find("no such column") != std::string::npos);
}

TEST_CASE("GET /activity?since=99999999999999h is a 400 naming since, not an empty page", "[http][activity]") {
  TempDir dir("door-activity-since-overflow");
  DoorOptions o;
  o.state_dir = dir.path();
  Door door(o);
  for (const char* q : {"?since=99999999999999h", "?until=99999999999999999999"}) {
    const auto r = http_request(door.port(), "GET", std::string("/activity") + q);
    INFO(q << " " << r.body);
    CHECK(r.status == 400);
    CHECK(r.body.find(q[1] == 's' ? "since" : "until") != std::string::npos);
    CHECK(r.body.find("out of range") != std::string::npos);
  }
}
