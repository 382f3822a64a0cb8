// backend: remote and peers, with a second `kevlaya-orch serve` (stand-in children) as the remote:
// routing, SSE through two doors, the remote's state in /status, /v1/models and metrics, a remote
// going down (a clear error in the caller's API shape) and coming back, local switches and remote
// calls that never wait for each other, peers imported (and a name clash refused).
#include <catch2/catch.hpp>
#include <signal.h>

#include <fstream>
#include <optional>
#include <regex>

#include "support/backend_fixture.hpp"
#include "supervisor/process_effects.hpp"
#include "support/models.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using namespace kevlaya::test;
using nlohmann::json;

namespace {

// A node door serving `kev` (the stand-in, `extra` template words) on `port` (0 = any).
struct Node {
  Node(const TempDir& dir, int port, const std::string& extra = "", const std::string& door_extra = "") {
    const auto root = dir / "node";
    write_text(root / "profiles/kev.yaml", command_profile_yaml("kev", extra));
    write_text(root / "pipelines/.keep", "");
    config = root / "kevlaya.yaml";
    write_text(config, std::string("profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n") +
                       (port ? "listen: {port: " + std::to_string(port) + "}\n" : std::string()) + door_extra);
  }
  std::filesystem::path config;
};

// `kevlaya-orch serve` on the port its config names (a restart keeps the URL).
std::unique_ptr<Proc> serve_fixed(const std::filesystem::path& config, const std::string& log) {
  auto p = std::make_unique<Proc>(std::vector<std::string>{orch_binary().string(), "serve", config.string()},
                                  config.parent_path() / log);
  INFO(p->log());
  REQUIRE_FALSE(p->wait_for(std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)")).empty());
  return p;
}

std::string remote_state(int port, const std::string& model) {
  const auto p = profile_in(status_of(port), model);
  return p && (*p)["remote"].is_object() ? (*p)["remote"]["state"].get<std::string>() : "";
}

// A node door serving kev, and a front door whose remote profile `big` points at it, reachable.
struct FrontAndNode {
  FrontAndNode(const TempDir& dir, const std::string& big_more) : node(dir, 0), remote_door(node.config) {
    url = "http://127.0.0.1:" + std::to_string(remote_door.port());
    write_text(dir / "profiles/big.yaml", remote_profile_yaml("big", url, big_more));
    write_door_config(dir);
    front.emplace(dir / "kevlaya.yaml");
    REQUIRE(eventually([&] { return remote_state(front->port(), "big") == "reachable"; }));
  }
  Node node;
  Serve remote_door;
  std::string url;  // the node door's
  std::optional<Serve> front;
};

// `kevlaya-orch reload` against the door on `port`.
CmdResult reload_door(int port) {
  return run_command(orch_binary().string() + " reload --url http://127.0.0.1:" + std::to_string(port) + " 2>&1");
}

}  // namespace

TEST_CASE("remote: calls, SSE through two doors, headers and state in /status, /v1/models, metrics", "[backends]") {
  TempDir dir("be-remote");
  FrontAndNode doors(dir, "model: kev\nalias: [large]\n");
  Serve& front = *doors.front;
  Serve& remote_door = doors.remote_door;
  const std::string& url = doors.url;
  auto r = request(front.port(), "/v1/chat/completions", chat("large"));  // an alias: renamed for the remote
  INFO(r.status << " " << r.body);
  CHECK(r.status == 200);
  CHECK(r.header("x-kevlaya-model") == "big");
  CHECK(r.header("x-kevlaya-backend") == "remote");
  CHECK(r.header("x-kevlaya-remote") == "127.0.0.1:" + std::to_string(remote_door.port()));
  CHECK(r.body.find("\"choices\"") != std::string::npos);
  auto s = request(front.port(), "/v1/chat/completions", chat("big", true));
  INFO(s.status << " " << s.body);
  CHECK(s.header("content-type").find("text/event-stream") != std::string::npos);
  CHECK(s.header("x-kevlaya-backend") == "remote");
  CHECK(s.body.find("data: ") != std::string::npos);
  CHECK(s.body.find("[DONE]") != std::string::npos);
  const auto st = status_of(front.port());
  const auto big = profile_in(st, "big");
  REQUIRE(big);
  CHECK((*big)["backend"] == "remote");
  CHECK((*big)["remote"]["url"] == url);
  CHECK((*big)["remote"]["last_error"].is_null());
  CHECK((*big)["pid"] == 0);
  CHECK(st["resident"] == json::array());  // a remote holds no local residency
  auto models = json::parse(request(front.port(), "/v1/models").body, nullptr, false);
  REQUIRE(models.is_object());
  CHECK(models["data"][0]["kevlaya"]["backend"] == "remote");
  CHECK(models["data"][0]["kevlaya"]["remote"]["state"] == "reachable");
  auto metrics = request(front.port(), "/metrics");
  CHECK(metrics.body.find("kevlaya_remote_up{model=\"big\"} 1") != std::string::npos);
  // The node did the work: its own /status shows kev resident.
  CHECK(status_of(remote_door.port())["resident"] == json::array({"kev"}));
  CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
  CHECK(remote_door.proc().signal_and_wait(SIGTERM) == 0);
}

// A reload applies remote profiles like local ones: an added remote is monitored and served (it
// used to answer 500 "remote profile without a monitor"), a changed url is the one checked and
// called (the old monitor kept the old one).
TEST_CASE("remote: a reload serves an added remote profile and moves a changed one to its new url", "[backends]") {
  TempDir dir("be-remote-reload");
  FrontAndNode doors(dir, "model: kev\n");
  Serve& front = *doors.front;
  const std::string& url = doors.url;
  write_text(dir / "profiles/more.yaml", remote_profile_yaml("more", url, "model: kev\n"));
  const int nobody = supervisor::pick_free_port("127.0.0.1");  // nobody listens there
  write_text(dir / "profiles/big.yaml", remote_profile_yaml("big", "http://127.0.0.1:" + std::to_string(nobody),
                                                            "model: kev\n"));
  auto reload = reload_door(front.port());
  INFO(reload.output);
  CHECK(reload.exit_code == 0);
  CHECK(reload.output.find("changed: big") != std::string::npos);
  CHECK(reload.output.find("added: more") != std::string::npos);
  REQUIRE(eventually([&] { return remote_state(front.port(), "more") == "reachable"; }));
  auto added = request(front.port(), "/v1/chat/completions", chat("more"));
  INFO(added.status << " " << added.body);
  CHECK(added.status == 200);
  REQUIRE(eventually([&] { return remote_state(front.port(), "big") == "unreachable"; }));
  const auto big = profile_in(status_of(front.port()), "big");
  REQUIRE(big);
  CHECK((*big)["remote"]["url"] == "http://127.0.0.1:" + std::to_string(nobody));
  CHECK(request(front.port(), "/v1/chat/completions", chat("big")).status == 503);
  CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
  CHECK(doors.remote_door.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("remote down: a clear error in the caller's API shape, then recovery when it returns", "[backends]") {
  TempDir dir("be-remote-down");
  const int node_port = supervisor::pick_free_port("127.0.0.1");
  Node node(dir, node_port);
  auto remote_door = serve_fixed(node.config, "serve1.log");
  const std::string url = "http://127.0.0.1:" + std::to_string(node_port);
  write_text(dir / "profiles/big.yaml", remote_profile_yaml("big", url, "model: kev\n"));
  write_door_config(dir);
  Serve front(dir / "kevlaya.yaml");
  REQUIRE(eventually([&] { return remote_state(front.port(), "big") == "reachable"; }));
  REQUIRE(request(front.port(), "/v1/chat/completions", chat("big")).status == 200);
  CHECK(remote_door->signal_and_wait(SIGTERM) == 0);
  // The first call may still find it "reachable" (502, the connection's failure); from the next
  // check on it is refused at once (503, the check's cause) until it answers again.
  auto first = request(front.port(), "/v1/chat/completions", chat("big"));
  INFO(first.status << " " << first.body);
  CHECK((first.status == 502 || first.status == 503));
  CHECK(first.body.find("\"error\"") != std::string::npos);
  CHECK(first.body.find("big: remote ") != std::string::npos);
  REQUIRE(eventually([&] { return remote_state(front.port(), "big") == "unreachable"; }));
  auto down = request(front.port(), "/v1/chat/completions", chat("big"));
  INFO(down.status << " " << down.body);
  CHECK(down.status == 503);
  CHECK(!down.header("retry-after").empty());
  CHECK(down.body.find("big: remote " + url + " is unreachable (") != std::string::npos);
  const auto p = profile_in(status_of(front.port()), "big");
  REQUIRE(p);
  CHECK((*p)["state"] == "failed");
  CHECK((*p)["remote"]["last_error"].get<std::string>().find("127.0.0.1:" + std::to_string(node_port)) != std::string::npos);
  // The same failure in Ollama's shape for an Ollama client.
  auto ollama = request(front.port(), "/api/chat", R"({"model":"big","stream":false,"messages":[{"role":"user","content":"x"}]})");
  INFO(ollama.status << " " << ollama.body);
  CHECK(ollama.status == 503);
  CHECK(std::regex_search(ollama.body, std::regex("\\{\"error\":\"big: remote ")));
  auto again = serve_fixed(node.config, "serve2.log");
  REQUIRE(eventually([&] { return remote_state(front.port(), "big") == "reachable"; }));
  CHECK(request(front.port(), "/v1/chat/completions", chat("big")).status == 200);
  CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
  CHECK(again->signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("remote: a local switch and a remote call run concurrently, neither waits for the other", "[backends]") {
  TempDir dir("be-remote-conc");
  Node node(dir, 0, ", --fake-token-ms, '300'");  // a slow remote answer: 20 tokens ~ 6 s
  Serve remote_door(node.config);
  REQUIRE(request(remote_door.port(), "/v1/chat/completions", chat("kev")).status == 200);  // loaded
  write_text(dir / "profiles/big.yaml",
             remote_profile_yaml("big", "http://127.0.0.1:" + std::to_string(remote_door.port()), "model: kev\n"));
  write_text(dir / "profiles/kev.yaml", command_profile_yaml("kev"));
  write_text(dir / "profiles/slow.yaml", command_profile_yaml("slow", ", --fake-load-ms, '8000'"));
  write_door_config(dir);
  Serve front(dir / "kevlaya.yaml");
  REQUIRE(eventually([&] { return remote_state(front.port(), "big") == "reachable"; }));
  const auto port = std::to_string(front.port());
  // A remote call in flight (streaming, ~6 s) while the local side switches kev in.
  const auto stream_out = dir / "stream.out";
  const std::string long_chat = R"({"model":"big","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"Once"}]})";
  Proc streaming({"/bin/sh", "-c", "curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d '" + long_chat +
                                       "' http://127.0.0.1:" + port + "/v1/chat/completions > " + stream_out.string()},
                 dir / "stream.log");
  REQUIRE(eventually([&] { return std::filesystem::exists(stream_out) && read_text(stream_out).find("data: ") != std::string::npos; }));
  REQUIRE(request(front.port(), "/v1/chat/completions", chat("kev")).status == 200);
  CHECK(read_text(stream_out).find("[DONE]") == std::string::npos);  // the remote stream is still going
  // A slow local switch (8 s load) while a remote call is made: the remote answers meanwhile.
  Proc switching({"/bin/sh", "-c", "curl -sS -o /dev/null --max-time 60 -H 'Content-Type: application/json' -d '" +
                                       chat("slow") + "' http://127.0.0.1:" + port + "/v1/chat/completions"},
                 dir / "switch.log");
  REQUIRE(eventually([&] {
    const auto s = profile_in(status_of(front.port()), "slow");
    return s && (*s)["state"] == "starting";
  }));
  REQUIRE(request(front.port(), "/v1/models").status == 200);
  auto quick = request(front.port(), "/v1/chat/completions",
                    R"({"model":"big","max_tokens":1,"messages":[{"role":"user","content":"x"}]})");
  CHECK(quick.status == 200);
  const auto s = profile_in(status_of(front.port()), "slow");
  REQUIRE(s);
  CHECK((*s)["state"] == "starting");  // the remote call did not wait for the 8 s load
  CHECK(streaming.wait_exit(std::chrono::seconds(60)) == 0);
  CHECK(read_text(stream_out).find("[DONE]") != std::string::npos);
  CHECK(switching.wait_exit(std::chrono::seconds(60)) == 0);
  CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
  CHECK(remote_door.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("remote: a profile pointing at a real llama-server", "[backends][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("be-remote-real");
  const int port = supervisor::pick_free_port("127.0.0.1");
  Proc server({real, "-m", tiny_llama().string(), "--host", "127.0.0.1", "--port", std::to_string(port), "-c", "256",
               "-ngl", "0", "--alias", "tiny"},
              dir / "llama.log");
  REQUIRE_FALSE(server.wait_for(std::regex("(listening on)"), std::chrono::seconds(120)).empty());
  write_text(dir / "profiles/tiny.yaml", remote_profile_yaml("tiny", "http://127.0.0.1:" + std::to_string(port)));
  write_door_config(dir);
  Serve front(dir / "kevlaya.yaml");
  REQUIRE(eventually([&] { return remote_state(front.port(), "tiny") == "reachable"; }, std::chrono::seconds(60)));
  auto r = request(front.port(), "/v1/chat/completions", chat("tiny"));
  INFO(r.status << " " << r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find("\"choices\"") != std::string::npos);
  auto s = request(front.port(), "/v1/chat/completions", chat("tiny", true));
  INFO(s.status << " " << s.body);
  CHECK(s.body.find("[DONE]") != std::string::npos);
  CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("peers: a front door imports the models a node door lists, and refuses a name clash", "[backends]") {
  TempDir dir("be-peers");
  Node node(dir, 0, "", "api_keys: [node-key]\n");
  Serve node_door(node.config);
  const std::string url = "http://127.0.0.1:" + std::to_string(node_door.port());
  write_text(dir / "profiles/laya.yaml", command_profile_yaml("laya"));
  write_door_config(dir, "peers:\n  - {url: \"" + url + "\", api_key: node-key}\n");
  {
    Serve front(dir / "kevlaya.yaml");
    auto models = json::parse(request(front.port(), "/v1/models").body, nullptr, false);
    REQUIRE(models.is_object());
    std::vector<std::string> ids;
    for (const auto& m : models["data"]) ids.push_back(m["id"]);
    CHECK(ids == std::vector<std::string>{"laya", "kev"});
    const auto kev = profile_in(status_of(front.port()), "kev");
    REQUIRE(kev);
    CHECK((*kev)["backend"] == "remote");
    CHECK((*kev)["remote"]["checked_path"] == "/v1/models/kev");  // the peer's own entry for it
    auto r = request(front.port(), "/v1/chat/completions", chat("kev"));
    INFO(r.status << " " << r.body);
    CHECK(r.status == 200);
    CHECK(r.header("x-kevlaya-backend") == "remote");
    CHECK(request(front.port(), "/v1/chat/completions", chat("laya")).status == 200);
    // A reload keeps the peer's models (the peer is not asked again); it used to drop them.
    auto reload = reload_door(front.port());
    INFO(reload.output);
    CHECK(reload.exit_code == 0);
    CHECK(reload.output.find("removed 0") != std::string::npos);
    CHECK(request(front.port(), "/v1/chat/completions", chat("kev")).status == 200);
    CHECK(front.proc().signal_and_wait(SIGTERM) == 0);
  }
  write_text(dir / "profiles/kev.yaml", command_profile_yaml("kev"));  // clashes with the node's kev
  auto clash = run_command("timeout 60 " + orch_binary().string() + " serve " + (dir / "kevlaya.yaml").string() + " --port 0");
  INFO(clash.output);
  CHECK(clash.exit_code == 1);
  CHECK(clash.output.find("peer " + url + " serves a model named 'kev', which profile 'kev' (") != std::string::npos);
  CHECK(node_door.proc().signal_and_wait(SIGTERM) == 0);
}
