// The front door's security keys of kevlaya.yaml: allowed_hosts, cors, runs, limits for slots,
// API keys from a file or an environment variable (docs/security.md). Errors name file:line:col.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>

#include "fixture.hpp"

using namespace kevlaya::test;

TEST_CASE("door keys: allowed_hosts, cors, runs and slot limits are read", "[config]") {
  TempDir d("door-keys");
  const auto f = minimal_tree(d, R"(allowed_hosts: [Kev.LAN, "[fe80::1]"]
cors: {allowed_origins: ["http://localhost:3000", "HTTPS://app.example", "*", localhost]}
runs: {max_queued: 5, max_queued_bytes: 1000, max_kept_bytes: 2000}
limits: {reserved_connections: 2, header_timeout_s: 3}
)");
  const auto r = cfg::load(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& o = r.config.orch;
  CHECK(o.allowed_hosts == std::vector<std::string>{"kev.lan", "[fe80::1]"});
  CHECK(o.cors.allowed_origins ==
        std::vector<std::string>{"http://localhost:3000", "https://app.example", "*", "localhost"});
  CHECK(o.runs.max_queued == 5);
  CHECK(o.runs.max_queued_bytes == 1000);
  CHECK(o.runs.max_kept_bytes == 2000);
  CHECK(o.limits.reserved_connections == 2);
  CHECK(o.limits.header_timeout_s == 3);
}

TEST_CASE("door keys: a bad host, origin or limit is an error at file:line:col", "[config]") {
  TempDir d("door-keys-bad");
  const auto f = minimal_tree(d, R"(allowed_hosts: [ok.lan, "http://x"]
cors:
  allowed_origins: ["*.x", "http://a.example/path", "http://ok.example:8080"]
runs: {max_queued: 0}
limits: {header_timeout_s: 0}
)");
  const auto r = cfg::load(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 1, 25, "allowed_hosts[1]: expected a host name or address without scheme or "
                                    "port (e.g. kev.lan), got 'http://x'")));
  const std::string expected = "expected an origin like http://localhost:3000 (scheme://host[:port], no path), "
                               "'localhost' (any loopback origin) or '*' (any origin), got ";
  CHECK(has_diag(r, diag(f, 3, 21, "cors.allowed_origins[0]: " + expected + "'*.x'")));
  CHECK(has_diag(r, diag(f, 3, 28, "cors.allowed_origins[1]: " + expected + "'http://a.example/path'")));
  CHECK(has_diag(r, diag(f, 4, 20, "runs.max_queued must be between 1 and 1048576, got 0")));
  CHECK(has_diag(r, diag(f, 5, 28, "limits.header_timeout_s must be between 1 and 86400, got 0")));
  CHECK(errors(r).size() == 5);
}

TEST_CASE("door keys: API keys from a file (one per line) and an environment variable", "[config]") {
  TempDir d("door-keys-api");
  write_text(d / "keys.txt", "# door keys\nsk-file-1\n\n  sk-file-2  \n");
  ::chmod((d / "keys.txt").c_str(), 0600);
  ::setenv("KEVLAYA_TEST_DOOR_KEYS", "sk-env-1, sk-env-2", 1);
  const auto f = minimal_tree(d, "api_keys: [sk-inline]\napi_keys_file: keys.txt\napi_keys_env: KEVLAYA_TEST_DOOR_KEYS\n");
  const auto r = cfg::load(f);
  ::unsetenv("KEVLAYA_TEST_DOOR_KEYS");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.diagnostics.empty());
  CHECK(r.config.orch.api_keys ==
        std::vector<std::string>{"sk-inline", "sk-file-1", "sk-file-2", "sk-env-1", "sk-env-2"});
}

TEST_CASE("door keys: a missing key file, an empty one or an unset variable is an error, a shared file warns",
          "[config]") {
  TempDir d("door-keys-missing");
  write_text(d / "empty.txt", "# nothing\n");
  ::chmod((d / "empty.txt").c_str(), 0644);
  ::unsetenv("KEVLAYA_TEST_UNSET_KEYS");
  const auto f = minimal_tree(d, "api_keys_file: nope.txt\napi_keys_env: KEVLAYA_TEST_UNSET_KEYS\n");
  const auto r = cfg::load(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 1, 16, "api_keys_file: cannot read " + cfg::display_path(d / "nope.txt") + ": file not found")));
  CHECK(has_diag(r, diag(f, 2, 15, "api_keys_env: environment variable KEVLAYA_TEST_UNSET_KEYS is not set "
                                    "or holds no key")));
  const auto g = minimal_tree(d, "api_keys_file: empty.txt\n");
  const auto r2 = cfg::load(g);
  INFO(dump(r2));
  CHECK(has_diag(r2, diag(g, 1, 16, "api_keys_file: no key in " + cfg::display_path(d / "empty.txt") +
                                     " (one key per line)")));
  CHECK(has_diag(r2, diag(g, 1, 16, "api_keys_file " + cfg::display_path(d / "empty.txt") +
                                     " is readable by other users (chmod 600 it)", "warning")));
}

TEST_CASE("door keys: admin keys inline, from a file and a variable, kept apart from api_keys", "[config]") {
  TempDir d("door-keys-admin");
  write_text(d / "admin.txt", "sk-admin-file\n");
  ::chmod((d / "admin.txt").c_str(), 0600);
  ::setenv("KEVLAYA_TEST_ADMIN_KEYS", "sk-admin-env", 1);
  const auto f = minimal_tree(d, "api_keys: [sk-agent]\nadmin_api_keys: [sk-admin]\nadmin_api_keys_file: admin.txt\n"
                         "admin_api_keys_env: KEVLAYA_TEST_ADMIN_KEYS\n");
  const auto r = cfg::load(f);
  ::unsetenv("KEVLAYA_TEST_ADMIN_KEYS");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.orch.api_keys == std::vector<std::string>{"sk-agent"});
  CHECK(r.config.orch.admin_api_keys == std::vector<std::string>{"sk-admin", "sk-admin-file", "sk-admin-env"});
  const auto g = minimal_tree(d, "admin_api_keys: ['']\nadmin_api_keys_file: nope.txt\n");
  const auto r2 = cfg::load(g);
  INFO(dump(r2));
  CHECK(has_diag(r2, diag(g, 1, 17, "admin_api_keys: an API key must not be empty (is an environment variable unset?)")));
  CHECK(has_diag(r2, diag(g, 2, 22, "admin_api_keys_file: cannot read " + cfg::display_path(d / "nope.txt") + ": file not found")));
}

TEST_CASE("door keys: tools are read, the MCP servers file checked as JSON at load", "[config]") {
  TempDir d("door-keys-tools");
  write_text(d / "mcp.json", R"({"mcpServers": {"echo": {"command": "python3"}}})");
  const auto f = minimal_tree(d, "tools:\n  builtin: read_file,grep_search\n  mcp_servers: mcp.json\n"
                                 "  binary: /opt/llama/llama-server\n  extra_args: [--threads, '2']\n");
  const auto r = cfg::load(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& t = r.config.orch.tools;
  CHECK(t.enabled());
  CHECK(t.builtin == "read_file,grep_search");
  CHECK(t.mcp_servers == d.path() / "mcp.json");
  CHECK(t.binary == "/opt/llama/llama-server");
  CHECK(t.extra_args == std::vector<std::string>{"--threads", "2"});
  CHECK_FALSE(cfg::load(minimal_tree(d, "")).config.orch.tools.enabled());  // off by default
}

TEST_CASE("door keys: a missing or invalid MCP servers document is an error at file:line:col", "[config]") {
  TempDir d("door-keys-tools-bad");
  write_text(d / "list.json", "[1, 2]");
  const auto f = minimal_tree(d, "tools:\n  mcp_servers: missing.json\n");
  const auto r = cfg::load(f);
  INFO(dump(r));
  REQUIRE(errors(r).size() == 1);
  CHECK(errors(r).front().find(":2:16: error: ") != std::string::npos);
  CHECK(errors(r).front().find("missing.json") != std::string::npos);
  const auto g = minimal_tree(d, "tools:\n  mcp_servers_json: '{\"mcpServers\": '\n");
  const auto r2 = cfg::load(g);
  INFO(dump(r2));
  REQUIRE(errors(r2).size() == 1);
  CHECK(errors(r2).front().find(":2:21: error: tools.mcp_servers_json is not valid JSON") != std::string::npos);
  const auto h = minimal_tree(d, "tools:\n  mcp_servers: list.json\n");
  const auto r3 = cfg::load(h);
  INFO(dump(r3));
  REQUIRE(errors(r3).size() == 1);
  CHECK(errors(r3).front().find(":2:16: error: tools.mcp_servers (") != std::string::npos);
  CHECK(errors(r3).front().find("must be a JSON object") != std::string::npos);
}
