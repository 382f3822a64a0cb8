// GET /ui (the status page, docs/ui.md): embedded assets with their content types, a strict CSP,
// ETag revalidation, 404 for unknown files, open without a key while its data stays behind the key,
// the browser redirect of GET / (and nothing else changed for API clients), the gate still applied;
// and the status page's extras in /status (recent requests) and GET /logs/{model}.
#include <catch2/catch.hpp>

#include <signal.h>

#include "door_fixture.hpp"
#include "http/ui.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
namespace ui = kevlaya::http::ui;

namespace {

const char* kBrowserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";

HttpReply get(const Door& door, const std::string& target,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
  return http_request(door.port(), "GET", target, "", std::move(headers));
}

}  // namespace

TEST_CASE("GET /ui serves the embedded page with its content type, CSP and cache headers", "[http][ui]") {
  Door door;
  const auto page = get(door, "/ui");
  REQUIRE(page.status == 200);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  CHECK(page.header("content-security-policy") == std::string(ui::kCsp));
  CHECK(page.header("x-content-type-options") == "nosniff");
  CHECK(page.header("cache-control") == "no-cache");
  CHECK(page.header("etag").size() == 18);  // "\"" + 16 hex + "\""
  CHECK(page.body.find("<script src=\"/ui/app.js\" defer></script>") != std::string::npos);
  CHECK(page.body.find("<script>") == std::string::npos);  // nothing inline: the CSP would block it
  CHECK(page.body.find("style=") == std::string::npos);
  CHECK(get(door, "/ui/").body == page.body);
  const std::pair<const char*, const char*> assets[] = {{"/ui/app.js", "text/javascript; charset=utf-8"},
                                                        {"/ui/app.css", "text/css; charset=utf-8"},
                                                        {"/ui/icon.svg", "image/svg+xml"}};
  for (const auto& [path, type] : assets) {
    INFO(path);
    const auto r = get(door, path);
    CHECK(r.status == 200);
    CHECK(r.header("content-type") == type);
    CHECK(r.header("content-security-policy") == std::string(ui::kCsp));
    CHECK(!r.body.empty());
  }
}

TEST_CASE("the status page's CSP allows only the door's own scripts, styles and fetches", "[http][ui]") {
  const std::string csp(ui::kCsp);
  CHECK(csp.find("default-src 'none'") != std::string::npos);
  CHECK(csp.find("script-src 'self';") != std::string::npos);
  CHECK(csp.find("connect-src 'self'") != std::string::npos);
  CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
  CHECK(csp.find("unsafe") == std::string::npos);
  CHECK(csp.find("http") == std::string::npos);  // no other origin
}

TEST_CASE("GET /ui with a matching If-None-Match answers 304 without a body", "[http][ui]") {
  Door door;
  const auto first = get(door, "/ui/app.js");
  const auto again = get(door, "/ui/app.js", {{"If-None-Match", first.header("etag")}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  CHECK(again.header("etag") == first.header("etag"));
  CHECK(get(door, "/ui/app.js", {{"If-None-Match", "\"0000000000000000\""}}).status == 200);
}

TEST_CASE("an unknown file under /ui is a 404, and no path escapes the embedded set", "[http][ui]") {
  Door door;
  for (const char* path : {"/ui/nope.js", "/ui/../status", "/ui/app.js/x", "/ui//app.js", "/uix"}) {
    INFO(path);
    const auto r = get(door, path);
    CHECK(r.status == 404);
    CHECK(r.json_body().contains("error"));
  }
}

TEST_CASE("with api_keys the page is open but its data, logs and the admin routes need the key", "[http][ui]") {
  DoorOptions o;
  o.api_keys = {"sekret"};
  Door door(o);
  CHECK(get(door, "/ui").status == 200);
  CHECK(get(door, "/ui/app.js").status == 200);
  CHECK(get(door, "/health").status == 200);
  CHECK(get(door, "/status").status == 401);
  CHECK(get(door, "/logs/kev").status == 401);
  CHECK(get(door, "/events").status == 401);
  CHECK(http_request(door.port(), "POST", "/admin/unload", "{}").status == 401);
  CHECK(get(door, "/status", {{"Authorization", "Bearer sekret"}}).status == 200);
}

TEST_CASE("GET / sends a browser to /ui and leaves API clients' answers as they were", "[http][ui]") {
  DoorOptions o;
  o.api_keys = {"sekret"};
  Door door(o);
  const auto browser = get(door, "/", {{"Accept", kBrowserAccept}});
  CHECK(browser.status == 302);
  CHECK(browser.header("location") == "/ui");
  CHECK(browser.header("vary") == "Accept");
  // API clients: the gate's answers of before (401 without the key, 404 with it).
  CHECK(get(door, "/").status == 401);
  CHECK(get(door, "/", {{"Accept", "application/json"}}).status == 401);
  const auto keyed = get(door, "/", {{"Accept", "*/*"}, {"Authorization", "Bearer sekret"}});
  CHECK(keyed.status == 404);
  CHECK(keyed.json_body()["error"]["message"] == "no route for GET /");
  CHECK(http_request(door.port(), "POST", "/", "{}", {{"Accept", kBrowserAccept}}).status == 401);
  CHECK(http_request(door.port(), "OPTIONS", "/", "", {{"Accept", kBrowserAccept}}).status == 404);
}

TEST_CASE("prefers_html: a browser's navigation yes, API clients and wildcards no", "[http][ui]") {
  CHECK(ui::prefers_html(kBrowserAccept));
  CHECK(ui::prefers_html("text/html"));
  CHECK(ui::prefers_html("application/json;q=0.5, text/html"));
  CHECK_FALSE(ui::prefers_html(""));
  CHECK_FALSE(ui::prefers_html("*/*"));
  CHECK_FALSE(ui::prefers_html("application/json"));
  CHECK_FALSE(ui::prefers_html("application/json, text/html;q=0.5"));
  CHECK_FALSE(ui::prefers_html("text/html;q=0"));
  CHECK_FALSE(ui::prefers_html("text/*"));
}

TEST_CASE("the page stays behind the gate: a foreign Host or Origin is refused on /ui too", "[http][ui]") {
  Door door;
  CHECK(get(door, "/ui", {{"Host", "evil.example"}}).status == 403);
  CHECK(get(door, "/ui", {{"Origin", "http://evil.example"}}).status == 403);
  const auto same = "http://127.0.0.1:" + std::to_string(door.port());
  CHECK(get(door, "/ui", {{"Host", "127.0.0.1:" + std::to_string(door.port())}, {"Origin", same}}).status == 200);
}

TEST_CASE("the embedded assets stay small (a status page, not an app bundle)", "[http][ui]") {
  CHECK(ui::total_bytes() > 1000);
  CHECK(ui::total_bytes() < 100 * 1024);
  CHECK(ui::find_asset("") == ui::find_asset("index.html"));
  CHECK(ui::find_asset("missing.css") == nullptr);
}

TEST_CASE("/status lists recent model calls with queue and swap times for the status page", "[http][ui]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "error")).status == 400);
  const auto st = get(door, "/status").json_body();
  REQUIRE(st["recent_requests"].size() == 2);
  const auto& ok = st["recent_requests"][0];
  CHECK(ok["model"] == "kev");
  CHECK(ok["endpoint"] == "/v1/chat/completions");
  CHECK(ok["status"] == 200);
  CHECK(ok["queue_ms"].is_number());
  CHECK(ok["swap_ms"].is_number());
  CHECK(st["recent_requests"][1]["status"] == 400);
  CHECK(st["recent_runs"].is_array());
  CHECK(st.contains("gpu"));  // null: the fixture plans nothing
  CHECK(st["profiles"][0].contains("since_ms"));
}

TEST_CASE("GET /logs/{model} refuses an unknown model and says when logs are not kept", "[http][ui]") {
  Door door;
  const auto unknown = get(door, "/logs/nobody");
  CHECK(unknown.status == 404);
  CHECK(unknown.json_body()["error"]["message"] == "no model or child named 'nobody'");
  const auto unkept = get(door, "/logs/kev");
  CHECK(unkept.status == 404);
  CHECK(unkept.json_body()["error"]["message"].get<std::string>().find("log_dir") != std::string::npos);
}

TEST_CASE("GET /logs/{model} returns the child's log tail, then only the lines after the offset", "[http][ui]") {
  TempDir dir("http-ui-logs");
  write_api_config(dir.path(), standin_binary().string());
  Serve serve(dir / "kevlaya.yaml");
  const auto port = static_cast<std::uint16_t>(serve.port());
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", chat_body("k")).status == 200);
  const auto first = http_request(port, "GET", "/logs/k?lines=5").json_body();  // an alias names its profile
  INFO(first.dump());
  CHECK(first["model"] == "kev");
  CHECK(first["file"] == true);
  CHECK(first["lines"].size() == 5);
  const auto offset = first["offset"].get<std::int64_t>();
  CHECK(offset > 0);
  // Against the file itself (the child may log more meanwhile): the tail before `offset`, then
  // exactly the whole lines between the two offsets.
  const auto next = http_request(port, "GET", "/logs/kev?after=" + std::to_string(offset)).json_body();
  const auto text = read_text(dir / "logs/kev.log");
  const auto lines_of = [](const std::string& t) {
    std::vector<std::string> out;
    for (std::size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1)
      out.push_back(t.substr(at, nl - at));
    return out;
  };
  const auto before = lines_of(text.substr(0, static_cast<std::size_t>(offset)));
  CHECK(first["lines"] == json(std::vector<std::string>(before.end() - 5, before.end())));
  const auto next_offset = next["offset"].get<std::int64_t>();
  CHECK(next_offset >= offset);
  CHECK(next["lines"] == json(lines_of(text.substr(static_cast<std::size_t>(offset),
                                                   static_cast<std::size_t>(next_offset - offset)))));
  const auto rotated = http_request(port, "GET", "/logs/kev?lines=2&after=999999999").json_body();  // past the end
  CHECK(rotated["lines"].size() == 2);
  CHECK(http_request(port, "GET", "/logs/laya").json_body()["file"] == false);  // never started
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
