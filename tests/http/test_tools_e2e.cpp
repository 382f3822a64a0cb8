// llama-server's /tools through the door: the model-less tools host (supervisor/tools_host.hpp)
// the door runs for `tools:` (built-in tools and MCP servers), on the real llama-server. Its
// answers reach the caller unchanged; calling a tool never starts a model; a POST needs an
// admin key; a killed host is restarted by itself; the door's stop leaves none behind.
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/proc_probes.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// One stand-in profile (never asked here) and the tools host: read_file and the MCP stand-in.
std::filesystem::path tools_write_config(const TempDir& dir, const std::string& server, const std::string& keys) {
  const auto mcp = dir / "mcp.json";
  write_text(mcp, json{{"mcpServers", {{"echo", {{"command", "/usr/bin/python3"},
                                                  {"args", json::array({(source_dir() / "tools/mcp-standin/mcp_echo.py").string()})}}}}}}
                      .dump());
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 0\nctx: 256\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n" + keys + "tools:\n  builtin: read_file\n  mcp_servers: " +
                                       mcp.string() + "\n  binary: " + server + "\n");
  return dir / "kevlaya.yaml";
}

json tool_call(const std::string& tool, const json& params) { return json{{"tool", tool}, {"params", params}}; }

// The tool names GET /tools lists (llama-server's `tool` field).
std::set<std::string> tool_names(const HttpReply& r) {
  std::set<std::string> out;
  const auto j = r.json_body();
  if (j.is_array())
    for (const auto& t : j) out.insert(t.value("tool", ""));
  return out;
}

// The pid of the process whose parent is the tools host: the MCP stand-in tells its own.
int mcp_pid(int port, const Headers& auth) {
  const auto r = http_request(port, "POST", "/tools", tool_call("echo_pid", json::object()).dump(), auth);
  if (r.status != 200) return 0;
  return std::atoi(r.json_body().value("plain_text_response", "0").c_str());
}

}  // namespace

TEST_CASE("tools: /tools lists and runs llama-server's built-in and MCP tools through the door, no model started",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("tools-e2e");
  Serve serve(tools_write_config(dir, real, "api_keys: [user-key]\nadmin_api_keys: [admin-key]\n"));
  const int port = serve.port();
  const Headers user = {{"Authorization", "Bearer user-key"}}, admin = {{"Authorization", "Bearer admin-key"}};
  REQUIRE(eventually([&] { return http_request(port, "GET", "/tools", "", user).status == 200; }, 30s));
  const auto listed = http_request(port, "GET", "/tools", "", user);
  INFO(listed.body);
  CHECK(tool_names(listed) == std::set<std::string>{"read_file", "echo_echo", "echo_add", "echo_pid", "echo_sleep"});
  CHECK(http_request(port, "GET", "/tools").status == 401);  // the door's key, not the host's

  const auto echoed = http_request(port, "POST", "/tools", tool_call("echo_echo", {{"message", "hi kev"}}).dump(), admin);
  INFO(echoed.body);
  CHECK(echoed.status == 200);
  CHECK(echoed.json_body().value("plain_text_response", "") == "hi kev");
  write_text(dir / "note.txt", "line one\n");
  const auto read = http_request(port, "POST", "/tools",
                                 tool_call("read_file", {{"path", (dir / "note.txt").string()}}).dump(), admin);
  CHECK(read.json_body().value("plain_text_response", "") == "line one\n");
  // llama-server's X-Tool-Cwd (the folder a built-in tool works in) goes with the call.
  auto in_dir = admin;
  in_dir.emplace_back("X-Tool-Cwd", dir.path().string());
  const auto relative = http_request(port, "POST", "/tools", tool_call("read_file", {{"path", "note.txt"}}).dump(), in_dir);
  INFO(relative.body);
  CHECK(relative.json_body().value("plain_text_response", "") == "line one\n");
  // A tool may write files or run commands: a model key may list the tools, not call one.
  const auto refused = http_request(port, "POST", "/tools", tool_call("echo_echo", {{"message", "x"}}).dump(), user);
  CHECK(refused.status == 403);

  const auto status = http_request(port, "GET", "/status", "", admin).json_body();
  for (const auto& p : status.value("profiles", json::array())) CHECK(p.value("state", "") == "stopped");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("tools: a killed tools host is restarted by itself, and the door's stop leaves no host behind",
          "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("tools-restart");
  Serve serve(tools_write_config(dir, real, ""));
  const int port = serve.port();
  int first = 0;
  REQUIRE(eventually([&] { return (first = mcp_pid(port, {})) > 0; }, 30s));
  const auto hosts = pids_with_arg((dir / "mcp.json").string());
  REQUIRE(hosts.size() == 1);
  REQUIRE(::kill(hosts.front(), SIGKILL) == 0);
  // Down meanwhile: a 503 that says when to come back (never a hang or a reset).
  int second = 0;
  bool saw_retry_after = false;
  REQUIRE(eventually([&] {
    const auto r = http_request(port, "POST", "/tools", tool_call("echo_pid", json::object()).dump());
    if (r.status == 503) saw_retry_after = saw_retry_after || !r.header("retry-after").empty();
    if (r.status == 200) second = std::atoi(r.json_body().value("plain_text_response", "0").c_str());
    return second > 0;
  }, 30s));
  CHECK(second != first);  // a new host started its own MCP server
  const auto again = pids_with_arg((dir / "mcp.json").string());
  REQUIRE(again.size() == 1);
  CHECK(again.front() != hosts.front());
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  CHECK_FALSE(alive(again.front()));
  CHECK(eventually([&] { return !alive(second); }, 10s));  // the host took its MCP server with it
  (void)saw_retry_after;  // (the restart may be faster than any request in between)
}

TEST_CASE("tools: a stop ends a running tool call at once instead of draining it", "[http][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("tools-stop");
  Serve serve(tools_write_config(dir, real, ""));
  const int port = serve.port();
  REQUIRE(eventually([&] { return mcp_pid(port, {}) > 0; }, 30s));
  std::thread caller([port] {
    http_request(port, "POST", "/tools", tool_call("echo_sleep", {{"seconds", 60}}).dump(), {}, 70s);
  });
  std::this_thread::sleep_for(1s);  // the call is in the MCP server by now
  const auto t0 = std::chrono::steady_clock::now();
  const int code = serve.proc().signal_and_wait(SIGTERM, 20s);
  const auto took = std::chrono::steady_clock::now() - t0;
  caller.join();
  CHECK(code == 0);
  CHECK(took < 5s);  // not the 60 s of the tool, nor the door's 30 s drain
}

TEST_CASE("tools: an MCP servers file that is not JSON stops serve at its file:line:col", "[http][e2e]") {
  TempDir dir("tools-bad-json");
  write_text(dir / "mcp.json", "{\"mcpServers\": ");
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            tiny_llama().string() + "\n");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\n"
                                   "tools:\n  mcp_servers: mcp.json\n");
  Proc p({orch_binary().string(), "serve", (dir / "kevlaya.yaml").string(), "--port", "0"}, dir / "serve.log");
  const auto code = p.wait_exit(30s);
  REQUIRE(code.has_value());
  CHECK(*code != 0);
  const auto log = p.log();
  INFO(log);
  CHECK(log.find("kevlaya.yaml:5:16") != std::string::npos);
  CHECK(log.find("tools.mcp_servers") != std::string::npos);
  CHECK(log.find("not valid JSON") != std::string::npos);
}
