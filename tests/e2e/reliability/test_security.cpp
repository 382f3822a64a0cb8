// Security checks against a real `kevlaya-orch serve`: API keys (constant-time compare, /health
// open), no key in any log, no file-name parameter that reaches outside its namespace, and
// request smuggling attempts refused with 400 before they reach a child.
#include <catch2/catch.hpp>

#include <signal.h>

#include "harness.hpp"
#include "http/auth.hpp"

using namespace kevlaya::test;

namespace {

constexpr const char* kKey = "sk-kevlaya-secret-0123456789";
constexpr const char* kWrongKey = "sk-kevlaya-guess-9876543210";

std::string bearer(const std::string& key) { return "Authorization: Bearer " + key + "\r\n"; }

// Everything the orchestrator and its children wrote (serve log + child logs).
std::string all_logs(const TempDir& dir) {
  std::string text = read_text(dir / "serve.log");
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "logs", ec))
    if (e.is_regular_file()) text += read_text(e.path());
  return text;
}

}  // namespace

TEST_CASE("constant_time_equal: equal only for identical strings, whatever the lengths",
          "[reliability][security]") {
  using kevlaya::http::constant_time_equal;
  CHECK(constant_time_equal(kKey, kKey));
  CHECK_FALSE(constant_time_equal(kKey, kWrongKey));
  CHECK_FALSE(constant_time_equal("sk-kevlaya", kKey));          // a prefix is not a match
  CHECK_FALSE(constant_time_equal(std::string(kKey) + "x", kKey));  // nor an extension
  CHECK_FALSE(constant_time_equal("", kKey));
  CHECK(constant_time_equal("", ""));
  CHECK_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
  using kevlaya::http::Access;
  const auto granted = [](std::vector<std::string> keys, std::string_view authorization) {
    return kevlaya::http::access(keys, {}, false, authorization, "") == Access::granted;
  };
  CHECK(granted({"other", kKey}, std::string("Bearer ") + kKey));
  CHECK_FALSE(granted({"other", kKey}, "Bearer "));
  CHECK_FALSE(granted({kKey}, ""));
}

TEST_CASE("access: admin keys alone open the admin routes, and work on every route", "[security]") {
  using kevlaya::http::access;
  using A = kevlaya::http::Access;
  const std::vector<std::string> users = {"user"}, admins = {"admin"}, none;
  CHECK(access(users, admins, true, "Bearer admin", "") == A::granted);
  CHECK(access(users, admins, true, "Bearer user", "") == A::forbidden);
  CHECK(access(users, admins, true, "Bearer nope", "") == A::unauthorized);
  CHECK(access(users, admins, true, "", "") == A::unauthorized);
  CHECK(access(users, admins, false, "", "admin") == A::granted);
  CHECK(access(users, admins, false, "", "user") == A::granted);
  CHECK(access(users, admins, false, "", "") == A::unauthorized);
  CHECK(access(none, admins, false, "", "") == A::granted);  // model calls open, admin keyed
  CHECK(access(none, admins, true, "", "") == A::unauthorized);
  CHECK(access(users, none, true, "Bearer user", "") == A::granted);  // no admin keys: as before
  CHECK(access(none, none, true, "", "") == A::granted);
  CHECK(access(users, admins, true, "Bearer ", "") == A::unauthorized);  // an empty key never matches
}

TEST_CASE("security: API key required and never logged, no traversal, smuggling refused with 400",
          "[reliability][security]") {
  TempDir dir("security");
  const auto config = write_config(dir, {{"kev", {}, ""}},
                                   std::string("api_keys: [\"") + kKey + "\"]\n");
  Serve serve(config);
  const int port = serve.port();

  SECTION("API key") {
    CHECK(http_get(port, "/health").status == 200);  // open for load balancers
    for (const std::string& headers : {std::string(), bearer(kWrongKey), bearer(""),
                                       bearer(std::string(kKey).substr(0, 10)), std::string("X-Api-Key: x\r\n")}) {
      auto r = http_get(port, "/v1/models", 10s, headers);
      INFO(headers);
      CHECK(r.status == 401);
      CHECK(is_openai_error(r.body));
      CHECK(r.body.find(kKey) == std::string::npos);
    }
    CHECK(http_get(port, "/v1/models", 10s, bearer(kKey)).status == 200);
    CHECK(http_get(port, "/v1/models", 10s, std::string("X-Api-Key: ") + kKey + "\r\n").status == 200);
    CHECK(http_post(port, "/v1/chat/completions", R"({"model":"kev","max_tokens":2,"messages":[{"role":"user","content":"a"}]})",
                    30s, bearer(kKey)).status == 200);
    CHECK(http_post(port, "/v1/chat/completions", "{}", 10s, bearer(kWrongKey)).status == 401);
    // No secret in any log: neither the configured key nor a presented wrong one.
    const std::string logs = all_logs(dir);
    CHECK(logs.find(kKey) == std::string::npos);
    CHECK(logs.find(kWrongKey) == std::string::npos);
    auto check = run_command(orch_binary().string() + " check " + config.string());
    CHECK(check.output.find(kKey) == std::string::npos);
  }

  SECTION("file-name parameters stay names: pipelines, runs, admin load") {
    const std::string auth = bearer(kKey);
    for (const std::string target :
         {"/v1/pipelines/../../../../etc/passwd/runs", "/v1/pipelines/..%2F..%2Fetc%2Fpasswd/runs",
          "/v1/pipelines/%2e%2e/runs", "/v1/pipelines//etc/passwd/runs"}) {
      auto r = http_post(port, target, R"({"input":"x"})", 10s, auth);
      INFO(target << " -> " << r.status << " " << r.body);
      CHECK(r.status == 404);
      CHECK(is_openai_error(r.body));
      CHECK(r.body.find("root:") == std::string::npos);
    }
    for (const std::string target : {"/v1/runs/../../../../etc/passwd", "/v1/runs/..%2F..%2Fetc%2Fpasswd",
                                     "/v1/runs/%00", "/v1/runs/1/../../status"}) {
      auto r = http_get(port, target, 10s, auth);
      INFO(target << " -> " << r.status << " " << r.body);
      CHECK(r.status == 404);
      CHECK(r.body.find("root:") == std::string::npos);
    }
    auto load = http_post(port, "/admin/load/..%2Fkev", "", 10s, auth);
    CHECK(load.status == 404);
  }

  SECTION("request smuggling") {
    const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer(kKey);
    const std::string body = R"({"model":"kev","max_tokens":2,"messages":[]})";
    const std::string len = std::to_string(body.size());
    const std::vector<std::pair<std::string, std::string>> attacks = {
        {"duplicate Content-Length", head + "Content-Length: " + len + "\r\nContent-Length: " + len + "\r\n\r\n" + body},
        {"differing Content-Length", head + "Content-Length: " + len + "\r\nContent-Length: 3\r\n\r\n" + body},
        {"Content-Length list", head + "Content-Length: " + len + ", " + len + "\r\n\r\n" + body},
        {"Content-Length + Transfer-Encoding", head + "Content-Length: " + len +
                                                   "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        {"Transfer-Encoding + Content-Length", head + "Transfer-Encoding: chunked\r\nContent-Length: " + len +
                                                   "\r\n\r\n0\r\n\r\n"},
        {"Transfer-Encoding list (chunked not last)", head + "Transfer-Encoding: chunked, identity\r\n\r\n" +
                                                          "GET /admin/unload HTTP/1.1\r\n\r\n"},
        {"Transfer-Encoding gzip, chunked", head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
        {"repeated Transfer-Encoding", head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        {"bad chunk size", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n"},
        {"chunk longer than its size", head + "Transfer-Encoding: chunked\r\n\r\n2\r\n" + body + "\r\n0\r\n\r\n"},
        {"space before colon", head + "Content-Length : " + len + "\r\n\r\n" + body},
        {"signed Content-Length", head + "Content-Length: +" + len + "\r\n\r\n" + body},
    };
    for (const auto& [what, raw] : attacks) {
      auto r = http_raw(port, raw, 10s);
      INFO(what << " -> " << r.status << " " << r.body);
      CHECK(r.status == 400);
      CHECK(is_openai_error(r.body));
      CHECK(r.headers["connection"] == "close");
    }
    CHECK(http_get(port, "/health").status == 200);  // the door is unharmed
  }
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
