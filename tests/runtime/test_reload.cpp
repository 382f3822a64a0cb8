// Hot reload: what needs a restart, the file stamp --watch-config polls, and what a reload frees.
#include <catch2/catch.hpp>

#include "runtime/reload.hpp"
#include "support/http_client.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using namespace kevlaya::test;

TEST_CASE("reload: the listen address and directories need a restart, the rest does not") {
  config::OrchestratorCfg a, b;
  CHECK(runtime::needs_restart(a, b).empty());
  b.listen.port = 9090;
  b.api_keys = {"k"};
  b.scheduling.drain_timeout_s = 5;
  const auto n = runtime::needs_restart(a, b);
  REQUIRE(n.size() == 1);
  CHECK(n[0] == "listen: 127.0.0.1:8080 -> 127.0.0.1:9090 (needs a restart)");
  // The preload list is read when the door starts; a new peer is asked only then (a removed one's
  // models go at once, so removing one is not listed).
  config::OrchestratorCfg c = b;
  c.preload = {"kev", "laya"};
  c.peers.push_back({});
  c.peers.back().url = "http://10.0.0.2:8080";
  const auto m = runtime::needs_restart(b, c);
  REQUIRE(m.size() == 2);
  CHECK(m[0] == "preload: [] -> [kev,laya] (needs a restart)");
  CHECK(m[1] == "peers: http://10.0.0.2:8080 added (needs a restart to import its models)");
  CHECK(runtime::needs_restart(c, b) == std::vector<std::string>{"preload: [kev,laya] -> [] (needs a restart)"});
}

TEST_CASE("reload: turning captures on or changing the history's store is reported as needing a restart") {
  // The door opens the history's file and makes the captures' ring once; a reload that changed
  // them was accepted and silently ignored.
  config::OrchestratorCfg a, b;
  b.capture.enabled = true;
  auto n = runtime::needs_restart(a, b);
  REQUIRE(n.size() == 1);
  CHECK(n[0] == "capture: off max_mib=64 -> on max_mib=64 (needs a restart)");
  b = a;
  b.activity.enabled = false;
  b.activity.max_mib = 8;
  n = runtime::needs_restart(a, b);
  REQUIRE(n.size() == 1);
  CHECK(n[0] == "activity: on max_records=100000 max_age_days=30 max_mib=64 -> off max_records=100000 "
                "max_age_days=30 max_mib=8 (needs a restart)");
  // The session headers are read per request: they apply at once.
  b = a;
  b.activity.session_headers = {"X-Conversation"};
  CHECK(runtime::needs_restart(a, b).empty());
}

TEST_CASE("reload: the configuration files' stamp changes when a profile is edited, added or removed") {
  TempDir d("reload-stamp");
  write_text(d / "kevlaya.yaml", "x: 1\n");
  write_text(d / "profiles/kev.yaml", "name: kev\n");
  config::OrchestratorCfg o;
  o.profiles_dir = d / "profiles";
  o.pipelines_dir = d / "pipelines";
  const auto s0 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(runtime::config_files_stamp(d / "kevlaya.yaml", o) == s0);
  write_text(d / "profiles/kev.yaml", "name: kev\nctx: 512\n");  // size changes
  const auto s1 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(s1 != s0);
  write_text(d / "profiles/laya.yaml", "name: laya\n");
  const auto s2 = runtime::config_files_stamp(d / "kevlaya.yaml", o);
  CHECK(s2 != s1);
  std::filesystem::remove(d / "profiles/laya.yaml");
  CHECK(runtime::config_files_stamp(d / "kevlaya.yaml", o) == s1);
}

// Through serve: each reload publishes one snapshot that the door, the supervisor and the pipeline
// runner share; the one before is freed once nothing runs it (before: every version was kept).
TEST_CASE("reload: after 100 reloads through the door one configuration version is alive", "[runtime][e2e]") {
  TempDir dir("reload-versions");
  const std::string common = "binary: " + standin_binary().string() + "\nmodel: " + tiny_llama().string() +
                             "\nngl: 0\nparallel: 1\n";
  write_text(dir / "profiles/kev.yaml", "name: kev\nctx: 256\n" + common);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n");
  Serve serve(dir / "kevlaya.yaml");
  const std::string chat = R"({"model":"kev","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
  REQUIRE(http_request(serve.port(), "POST", "/v1/chat/completions", chat).status == 200);
  for (int i = 0; i < 100; ++i) {
    // laya comes and goes every other reload, kev (running) never changes
    if (i % 2 == 0) write_text(dir / "profiles/laya.yaml", "name: laya\nctx: 256\n" + common);
    else std::filesystem::remove(dir / "profiles/laya.yaml");
    const auto r = http_request(serve.port(), "POST", "/admin/reload");
    INFO(i << ": " << r.body);
    REQUIRE(r.status == 200);
  }
  const auto m = http_request(serve.port(), "GET", "/metrics");
  REQUIRE(m.status == 200);
  CHECK(m.body.find("\nkevlaya_config_versions 1\n") != std::string::npos);
  CHECK(http_request(serve.port(), "POST", "/v1/chat/completions", chat).status == 200);
}

// The door works out once per configuration which session headers it may record (not per
// request): a reload's new list must name the very next call's session.
TEST_CASE("reload: new activity.session_headers name the next call's session at once", "[runtime][e2e]") {
  TempDir dir("reload-session-headers");
  write_text(dir / "profiles/kev.yaml", "name: kev\nctx: 256\nbinary: " + standin_binary().string() +
                                           "\nmodel: " + tiny_llama().string() + "\nngl: 0\nparallel: 1\n");
  write_text(dir / "pipelines/.keep", "");
  const std::string base = "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n";
  write_text(dir / "kevlaya.yaml", base);
  Serve serve(dir / "kevlaya.yaml");
  const std::string chat = R"({"model":"kev","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
  const auto records = [&](const std::string& query) {  // how many GET /activity?QUERY lists
    const auto r = http_request(serve.port(), "GET", "/activity?" + query);
    return r.status == 200 ? r.json_body()["records"].size() : 0;
  };
  REQUIRE(http_request(serve.port(), "POST", "/v1/chat/completions", chat, {{"X-Conversation", "c-1"}}).status == 200);
  REQUIRE(eventually([&] { return records("model=kev") == 1; }));
  CHECK(records("client=c-1") == 0);  // not a session header yet
  write_text(dir / "kevlaya.yaml", base + "activity:\n  session_headers: [X-Conversation]\n");
  const auto r = http_request(serve.port(), "POST", "/admin/reload");
  INFO(r.body);
  REQUIRE(r.status == 200);
  REQUIRE(http_request(serve.port(), "POST", "/v1/chat/completions", chat, {{"X-Conversation", "c-2"}}).status == 200);
  CHECK(eventually([&] { return records("client=c-2") == 1; }));
}
