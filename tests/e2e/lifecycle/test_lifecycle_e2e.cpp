// Lifecycle end to end (docs/lifecycle.md): `kevlaya-orch serve` with the stand-in (or the real
// llama-server) as the child, driven by curl and by the client commands of the same binary
// (status, load, unload, reload, events). Waits are bounded polls on outcomes.
#include <catch2/catch.hpp>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
using nlohmann::json;

namespace {

const char* kChat = R"({"model":"MODEL","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";

std::string chat_body(const std::string& model, const std::string& extra = "") {
  std::string b = kChat;
  b.replace(b.find("MODEL"), 5, model);
  if (!extra.empty()) b.insert(b.size() - 1, "," + extra);
  return b;
}

void write_config(const TempDir& dir, const std::string& binary, const std::string& top,
                  const std::string& kev_extra = "", const std::string& laya_extra = "") {
  const std::string model = tiny_llama().string();
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + binary + "\nmodel: " + model +
                                            "\nngl: 0\nctx: 256\nshared_base: false\n" + kev_extra);
  write_text(dir / "profiles/laya.yaml", "name: laya\nbinary: " + binary + "\nmodel: " + model +
                                             "\nngl: 0\nctx: 256\nshared_base: false\n" + laya_extra);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n" + top);
}

std::string url(Serve& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

std::size_t count_of(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

CmdResult cli(const std::string& args) { return run_command(orch_binary().string() + " " + args + " 2>&1"); }

CmdResult post_chat(Serve& s, const std::string& body) {
  return run_command("curl -sS -o /dev/null -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' -d '" +
                     body + "' " + url(s) + "/v1/chat/completions");
}

json status_json(Serve& s) {
  auto r = cli("status --json --url " + url(s));
  auto j = json::parse(r.output, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

json profile(const json& status, const std::string& name) {
  for (const auto& p : status.value("profiles", json::array()))
    if (p.value("name", "") == name) return p;
  return json::object();
}

std::string state_of(Serve& s, const std::string& name) { return profile(status_json(s), name).value("state", ""); }

// Idle unload of kev after one answer; returns the seconds from the answer to `stopped`.
double idle_unload(const std::string& binary) {
  TempDir dir("life-idle");
  write_config(dir, binary, "idle_unload_s: 1\n");
  Serve serve(dir / "kevlaya.yaml");
  Proc events({orch_binary().string(), "events", "--url", url(serve)}, dir / "events.log");
  // The follower is listening once it shows a reload (a busy machine may start it after the unload).
  REQUIRE(eventually([&] {
    cli("reload --url " + url(serve));
    return read_text(dir / "events.log").find("reload changed") != std::string::npos;
  }, 60s));
  REQUIRE(eventually([&] { return post_chat(serve, chat_body("kev")).output == "200"; }, 60s));
  const auto answered = std::chrono::steady_clock::now();
  // Still ready after the answer: not unloaded before idle_unload_s (a status read that itself took
  // longer than that, on a busy machine, may already see the idle unload, and that is right).
  const auto now_state = state_of(serve, "kev");
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - answered).count();
  INFO("state " << now_state << " read " << read_s << " s after the answer");
  CHECK((now_state == "ready" || read_s >= 1.0));
  const bool stopped = eventually([&] { return state_of(serve, "kev") == "stopped"; }, 30s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - answered).count();
  INFO(serve.proc().log());
  CHECK(stopped);
  CHECK(!events.wait_for(std::regex("unload kev \\(idle\\)")).empty());
  WARN("idle unload: stopped " << secs << " s after the answer (idle_unload_s 1)");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  return secs;
}

}  // namespace

TEST_CASE("lifecycle e2e: an idle child is unloaded after idle_unload_s, events show the unload", "[lifecycle][e2e]") {
  idle_unload(standin_binary().string());
}

TEST_CASE("lifecycle e2e: idle unload on the real llama-server", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  idle_unload(real);
}

namespace {

// keep_alive 0 in the body (the door's field: the child is sent the body without it) unloads kev
// after the answer; a burst sent while it stops waits for a fresh start, every call answered.
void keep_alive_zero(const std::string& binary) {
  TempDir dir("life-burst");
  write_config(dir, binary, "");
  Serve serve(dir / "kevlaya.yaml");
  CHECK(post_chat(serve, chat_body("kev", R"("keep_alive":0)")).output == "200");
  // The unload starts at once; these arrive while it stops (or right after): each waits for a
  // fresh start.
  const std::string one = "curl -sS -o /dev/null -w '%{http_code}\\n' --max-time 120 -H 'Content-Type: application/json' -d '" +
                          chat_body("kev") + "' " + url(serve) + "/v1/chat/completions";
  std::string burst;
  for (int i = 0; i < 8; ++i) burst += one + " & ";
  auto r = run_command(burst + "wait");
  INFO(r.output << serve.proc().log());
  CHECK(count_of(r.output, "200\n") == 8);
  CHECK(state_of(serve, "kev") == "ready");
  CHECK(serve.proc().log().find("unloaded (keep_alive)") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: keep_alive 0 unloads after the answer and a burst during the stop loses nothing",
          "[lifecycle][e2e]") {
  keep_alive_zero(standin_binary().string());
}

// The door removes keep_alive from the body it forwards (a rewrite: the body's tree is built from
// the request's text for it): the real llama-server gets and answers that body.
TEST_CASE("lifecycle e2e: keep_alive 0 on the real llama-server", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  keep_alive_zero(real);
}

namespace {

// Switch ahead (docs/supervisor.md): after kev, laya, kev, laya through the door, kev is started
// before anyone asks for it; the switch record says so, the next kev call waits for no switch, laya
// is guessed after it, and /metrics counts both guesses.
void switch_ahead(const std::string& binary) {
  TempDir dir("life-ahead");
  write_config(dir, binary, "residency: rotate\n");
  Serve serve(dir / "kevlaya.yaml");
  for (const char* m : {"kev", "laya", "kev", "laya"}) REQUIRE(post_chat(serve, chat_body(m)).output == "200");
  INFO(serve.proc().log());
  CHECK(eventually([&] { return state_of(serve, "kev") == "ready"; }, 60s));
  const auto st = status_json(serve);
  CHECK(profile(st, "laya").value("state", "") == "stopped");
  const auto& last = st.at("recent_switches").back();
  CHECK(last.value("from", "") == "laya");
  CHECK(last.value("to", "") == "kev");
  CHECK(last.value("ahead", false));
  // The fifth call waits for no switch; after it, laya is guessed in turn.
  const auto fifth = run_command("curl -sS -D - -o /dev/null --max-time 120 -H 'Content-Type: application/json' -d '" +
                                 chat_body("kev") + "' " + url(serve) + "/v1/chat/completions");
  CHECK(fifth.output.find(" 200") != std::string::npos);
  CHECK(fifth.output.find("X-Kevlaya-Swap-Ms: 0\r\n") != std::string::npos);
  CHECK(eventually([&] { return state_of(serve, "laya") == "ready"; }, 60s));
  const auto metrics = run_command("curl -sS --max-time 5 " + url(serve) + "/metrics").output;
  CHECK(metrics.find("kevlaya_switches_ahead_total{result=\"ok\"} 2") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: alternating calls get the next model started ahead", "[lifecycle][e2e]") {
  switch_ahead(standin_binary().string());
}

TEST_CASE("lifecycle e2e: switch ahead on the real llama-server", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  switch_ahead(real);
}

namespace {

// The literal defaults (no residency, no gpu keys) with two tiny models: on a machine without a GPU
// budget host RAM decides, and both fit, so they stay resident and the second call switches nothing
// (with an NVIDIA GPU the VRAM ledger says the same for models this small).
void defaults_keep_both(const std::string& binary) {
  TempDir dir("life-ram");
  write_config(dir, binary, "");
  Serve serve(dir / "kevlaya.yaml");
  INFO(serve.proc().log());
  CHECK(status_json(serve).at("gpu").value("mode", "") == "co-resident");
  REQUIRE(post_chat(serve, chat_body("kev")).output == "200");
  REQUIRE(post_chat(serve, chat_body("laya")).output == "200");
  const auto st = status_json(serve);
  CHECK(profile(st, "kev").value("state", "") == "ready");
  CHECK(profile(st, "laya").value("state", "") == "ready");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: the defaults keep two models resident when both fit", "[lifecycle][e2e]") {
  defaults_keep_both(standin_binary().string());
}

namespace {

// A pin with no gpu keys: without a GPU budget it is kept when host RAM holds every profile (it
// used to be refused: "set gpu.vram_mib"); it starts with the door, before any call.
void pin_on_defaults(const std::string& binary) {
  TempDir dir("life-ram-pin");
  write_config(dir, binary, "", "pin: true\n");
  Serve serve(dir / "kevlaya.yaml");
  INFO(serve.proc().log());
  CHECK(eventually([&] { return state_of(serve, "kev") == "ready"; }, 60s));
  CHECK(profile(status_json(serve), "kev").value("pinned", false));
  CHECK(post_chat(serve, chat_body("laya")).output == "200");
  CHECK(state_of(serve, "kev") == "ready");  // never a victim
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: a pin on the defaults starts with the door when everything fits", "[lifecycle][e2e]") {
  pin_on_defaults(standin_binary().string());
}

TEST_CASE("lifecycle e2e: a pin on the defaults with the real llama-server", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  pin_on_defaults(real);
}

namespace {

// Without a GPU, `residency: rotate` with a pin used to be refused ("set gpu.vram_mib"); now the
// pin stays up and the others rotate beside it, one at a time (each pair priced by host RAM).
void pin_beside_rotation(const std::string& binary) {
  TempDir dir("life-ram-pin-rotate");
  write_config(dir, binary, "residency: rotate\n", "pin: true\n");
  write_text(dir / "profiles/x.yaml", replaced(read_text(dir / "profiles/laya.yaml"), "name: laya", "name: x"));
  Serve serve(dir / "kevlaya.yaml");
  INFO(serve.proc().log());
  CHECK(eventually([&] { return state_of(serve, "kev") == "ready"; }, 60s));
  CHECK(post_chat(serve, chat_body("laya")).output == "200");
  CHECK(state_of(serve, "laya") == "ready");
  CHECK(post_chat(serve, chat_body("x")).output == "200");
  CHECK(state_of(serve, "x") == "ready");
  CHECK(eventually([&] { return state_of(serve, "laya") == "stopped"; }, 30s));  // x took its place
  CHECK(state_of(serve, "kev") == "ready");  // never a victim
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: without a GPU a pin stays up while the others rotate beside it", "[lifecycle][e2e]") {
  pin_beside_rotation(standin_binary().string());
}

TEST_CASE("lifecycle e2e: without a GPU a pin stays up beside rotating real llama-servers", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  pin_beside_rotation(real);
}

TEST_CASE("lifecycle e2e: the defaults keep two real llama-servers resident when both fit", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  defaults_keep_both(real);
}

TEST_CASE("lifecycle e2e: preload starts a model at startup while /health answers at once", "[lifecycle][e2e]") {
  TempDir dir("life-preload");
  write_config(dir, standin_binary().string(), "preload: [laya]\n", "", "extra_args: [--fake-load-ms, '1500']\n");
  Serve serve(dir / "kevlaya.yaml");
  // It answers at once: as llama-server does while it loads, /health is 503 "Loading model" until
  // the preloaded child is up; the liveness path is 200 throughout.
  auto h = run_command("curl -sS --max-time 5 -w ' %{http_code}' " + url(serve) + "/health");
  CHECK(h.output.find("Loading model") != std::string::npos);
  CHECK(h.output.find(" 503") != std::string::npos);
  auto live = run_command("curl -sS --max-time 5 -w ' %{http_code}' " + url(serve) + "/livez");
  CHECK(live.output.find(" 200") != std::string::npos);
  const auto st = profile(status_json(serve), "laya");
  INFO(st.dump());
  CHECK(st.value("state", "") == "starting");
  CHECK(st.contains("load_progress"));
  CHECK(eventually([&] { return state_of(serve, "laya") == "ready"; }, 60s));
  CHECK(eventually([&] { return run_command("curl -sS --max-time 5 " + url(serve) + "/health").output.find("\"ok\"") != std::string::npos; }, 10s));
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("lifecycle e2e: the client commands against a running door", "[lifecycle][e2e]") {
  TempDir dir("life-cli");
  write_config(dir, standin_binary().string(), "api_keys: [sekret]\n");
  Serve serve(dir / "kevlaya.yaml");
  auto refused = cli("status --url " + url(serve));
  CHECK(refused.exit_code == 1);
  CHECK(refused.output.find("missing or invalid API key") != std::string::npos);
  const std::string common = " --url " + url(serve) + " --api-key sekret";
  auto load = cli("load kev" + common);
  INFO(load.output);
  CHECK(load.exit_code == 0);
  CHECK(load.output.find("kev: ready") != std::string::npos);
  auto st = cli("status" + common);
  INFO(st.output);
  CHECK(st.exit_code == 0);
  CHECK(std::regex_search(st.output, std::regex("kev +ready")));
  auto un = cli("unload kev" + common);
  CHECK(un.exit_code == 0);
  CHECK(un.output.find("kev: unloaded") != std::string::npos);
  auto bad = cli("load nosuch" + common);
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("kevlaya-orch load: ") == 0);
  auto env = run_command("KEVLAYA_URL=" + url(serve) + " KEVLAYA_API_KEY=sekret " + orch_binary().string() +
                         " status --json");
  CHECK(env.exit_code == 0);
  CHECK(env.output.find("\"profiles\"") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

namespace {

// admin_api_keys end to end: the agent's key is refused on unload (403, one sentence from the
// CLI) and still calls models with curl's form type, the CLI with --config takes the admin key.
void admin_keys_through_the_cli(const std::string& binary) {
  TempDir dir("life-admin");
  write_config(dir, binary, "api_keys: [agent-key]\nadmin_api_keys: [admin-key]\n");
  Serve serve(dir / "kevlaya.yaml");
  CHECK(cli("load kev --url " + url(serve) + " --api-key admin-key").exit_code == 0);
  auto agent = cli("unload kev --url " + url(serve) + " --api-key agent-key");
  INFO(agent.output);
  CHECK(agent.exit_code == 1);
  CHECK(agent.output.find("this key may call models but not /admin, /logs") != std::string::npos);
  CHECK(std::regex_search(cli("status --url " + url(serve) + " --api-key agent-key").output, std::regex("kev +ready")));
  auto chat = run_command("curl -sS --max-time 30 -H 'Authorization: Bearer agent-key' " + url(serve) +
                          "/v1/chat/completions -d '{\"model\":\"kev\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}'");
  CHECK(chat.output.find("\"choices\"") != std::string::npos);  // curl -d: a form type, read as JSON
  auto op = cli("unload kev --config " + (dir / "kevlaya.yaml").string() + " --url " + url(serve));
  INFO(op.output);
  CHECK(op.exit_code == 0);
  CHECK(op.output.find("kev: unloaded") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: with admin keys an agent's key cannot unload, the CLI's --config uses the admin key",
          "[lifecycle][e2e]") {
  admin_keys_through_the_cli(standin_binary().string());
}

TEST_CASE("lifecycle e2e: admin keys and curl -d with the real llama-server", "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  admin_keys_through_the_cli(real);
}

TEST_CASE("lifecycle e2e: the client commands against a door that is down fail with one sentence",
          "[lifecycle][e2e]") {
  for (const char* cmd : {"status", "load kev", "unload", "reload", "events"}) {
    auto r = cli(std::string(cmd) + " --url http://127.0.0.1:9 --timeout 5");
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("cannot reach the door at http://127.0.0.1:9") != std::string::npos);
    CHECK(count_of(r.output, "\n") == 1);
  }
  auto bad = cli("status --url https://x:1");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("plain HTTP") != std::string::npos);
}

TEST_CASE("lifecycle e2e: reload restarts only the changed child, an invalid edit changes nothing",
          "[lifecycle][e2e]") {
  TempDir dir("life-reload");
  write_config(dir, standin_binary().string(), "residency: co-resident\ngpu: {vram_mib: 65536}\n", "",
               "extra_args: [--fake-token-ms, '150']\n");
  Serve serve(dir / "kevlaya.yaml");
  const std::string u = " --url " + url(serve);
  REQUIRE(cli("load kev" + u).exit_code == 0);
  REQUIRE(cli("load laya" + u).exit_code == 0);
  const int kev_pid = profile(status_json(serve), "kev").value("pid", 0);
  const int laya_pid = profile(status_json(serve), "laya").value("pid", 0);
  REQUIRE(kev_pid > 0);
  REQUIRE(laya_pid > 0);
  // A streaming request to laya in flight during the reload finishes.
  Proc stream({"/usr/bin/curl", "-sS", "-N", "--max-time", "120", "-H", "Content-Type: application/json", "-d",
               R"({"model":"laya","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"Once"}]})",
               url(serve) + "/v1/chat/completions"},
              dir / "stream.log");
  REQUIRE(!stream.wait_for(std::regex("data: ")).empty());
  const auto laya_yaml = dir / "profiles/laya.yaml";
  write_text(laya_yaml, replaced(read_text(laya_yaml), "ctx: 256", "ctx: 512"));
  auto r = cli("reload" + u);
  INFO(r.output << serve.proc().log());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("changed: laya") != std::string::npos);
  CHECK(stream.wait_exit(60s) == std::optional<int>(0));
  CHECK(stream.log().find("[DONE]") != std::string::npos);
  REQUIRE(cli("load laya" + u).exit_code == 0);
  auto st = status_json(serve);
  CHECK(profile(st, "kev").value("pid", 0) == kev_pid);  // untouched
  CHECK(profile(st, "laya").value("pid", 0) != laya_pid);
  // An invalid edit: nothing changes, the error names file:line:col.
  write_text(dir / "profiles/kev.yaml", replaced(read_text(dir / "profiles/kev.yaml"), "ctx: 256", "ctx: lots"));
  auto bad = cli("reload" + u);
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(std::regex_search(bad.output, std::regex("kev\\.yaml:5:6: error: ")));
  CHECK(profile(status_json(serve), "kev").value("pid", 0) == kev_pid);
  // SIGHUP reloads too: the removed profile is gone from /v1/models (with one profile left, a call
  // naming it goes to kev, as a one-model llama-server ignores the name).
  std::filesystem::remove(dir / "profiles/laya.yaml");
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + standin_binary().string() + "\nmodel: " +
                                            tiny_llama().string() + "\nngl: 0\nctx: 256\nshared_base: false\n");
  ::kill(serve.proc().pid(), SIGHUP);
  CHECK(eventually([&] {
    const auto models = run_command("curl -sS --max-time 5 " + url(serve) + "/v1/models").output;
    return models.find("\"kev\"") != std::string::npos && models.find("\"laya\"") == std::string::npos;
  }, 30s));
  CHECK(profile(status_json(serve), "kev").value("pid", 0) == kev_pid);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// /status "gpu" is the plan of the configuration in force: a reload publishes the new plan with the
// new configuration (it used to hand the door options without a plan, so "gpu" went null).
TEST_CASE("lifecycle e2e: /status keeps its GPU plan across a reload", "[lifecycle][e2e]") {
  TempDir dir("life-reload-plan");
  write_config(dir, standin_binary().string(), "residency: rotate\ngpu: {vram_mib: 4096}\n");
  Serve serve(dir / "kevlaya.yaml");
  const std::string u = " --url " + url(serve);
  INFO(serve.proc().log());
  REQUIRE(status_json(serve).at("gpu").value("mode", "") == "rotate");
  REQUIRE(cli("reload" + u).exit_code == 0);
  CHECK(status_json(serve).at("gpu").value("mode", "") == "rotate");
  // A reload that changes the plan shows the new one.
  write_text(dir / "kevlaya.yaml", replaced(read_text(dir / "kevlaya.yaml"), "residency: rotate", "residency: co-resident"));
  REQUIRE(cli("reload" + u).exit_code == 0);
  CHECK(status_json(serve).at("gpu").value("mode", "") == "co-resident");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// A reload plans as the start does: a child restarted by it keeps the devices its profile names
// (it used to come back without CUDA_VISIBLE_DEVICES, i.e. on every GPU), and an unchanged plan
// restarts nothing.
namespace {

void reload_keeps_placement(const std::string& binary) {
  TempDir dir("life-reload-gpu");
  write_config(dir, binary, "", "gpu: [1]\n");
  Serve serve(dir / "kevlaya.yaml");
  const std::string u = " --url " + url(serve);
  REQUIRE(cli("load kev" + u).exit_code == 0);
  const int first = profile(status_json(serve), "kev").value("pid", 0);
  REQUIRE(first > 0);
  CHECK(environ_of(first)["CUDA_VISIBLE_DEVICES"] == "1");
  auto same = cli("reload" + u);
  INFO(same.output << serve.proc().log());
  CHECK(same.output.find("changed 0") != std::string::npos);
  const auto kev_yaml = dir / "profiles/kev.yaml";
  write_text(kev_yaml, replaced(read_text(kev_yaml), "ctx: 256", "ctx: 512"));
  auto edited = cli("reload" + u);
  INFO(edited.output);
  CHECK(edited.output.find("changed: kev") != std::string::npos);
  REQUIRE(cli("load kev" + u).exit_code == 0);
  const int second = profile(status_json(serve), "kev").value("pid", 0);
  REQUIRE(second > 0);
  CHECK(second != first);
  CHECK(environ_of(second)["CUDA_VISIBLE_DEVICES"] == "1");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("lifecycle e2e: a child restarted by a reload keeps its GPU placement", "[lifecycle][e2e]") {
  reload_keeps_placement(standin_binary().string());
}

TEST_CASE("lifecycle e2e: a real llama-server restarted by a reload keeps its GPU placement",
          "[lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  reload_keeps_placement(real);
}

TEST_CASE("lifecycle e2e: check, plan and serve refuse a pin that cannot fit beside the rotating ones",
          "[lifecycle][e2e]") {
  TempDir dir("life-pin");
  write_config(dir, standin_binary().string(), "gpu: {vram_mib: 1000}\n", "pin: true\n");  // one child fits
  const auto cfg = (dir / "kevlaya.yaml").string();
  auto check = cli("check " + cfg);
  INFO(check.output);
  CHECK(check.exit_code == 1);
  CHECK(check.output.find("laya: does not fit beside the pinned kev") != std::string::npos);
  auto plan = cli("plan " + cfg);
  CHECK(plan.exit_code == 1);
  CHECK(plan.output.find("does not fit beside the pinned kev") != std::string::npos);
  // (bounded: a serve that did not refuse would run until the timeout)
  auto serve = run_command("timeout 60 " + orch_binary().string() + " serve " + cfg + " --port 0 2>&1");
  CHECK(serve.exit_code == 1);
  CHECK(serve.output.find("pin: laya: does not fit beside the pinned kev") != std::string::npos);
}

// The same on the real llama-server: the supervisor stores its load, and after a restart every
// start of it announces the stored figure (the starting event's eta_s). The load repeats until the
// events client, connecting meanwhile, has seen one.
TEST_CASE("lifecycle e2e: a real llama-server's load is kept across a restart and announced when it starts", "[eta][lifecycle][e2e][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  TempDir dir("life-eta-real");
  write_config(dir, real, "");
  {
    Serve serve(dir / "kevlaya.yaml");
    REQUIRE(eventually([&] { return post_chat(serve, chat_body("kev")).output == "200"; }, 60s));
    CHECK(eventually([&] { return read_text(dir / "state/ledger-load-times.json").find("\"kev|") != std::string::npos; }));
    CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  }
  Serve again(dir / "kevlaya.yaml");
  Proc events({orch_binary().string(), "events", "--json", "--url", url(again)}, dir / "events.log");
  const bool announced = eventually([&] {
    cli("unload kev --url " + url(again));
    cli("load kev --url " + url(again));
    return read_text(dir / "events.log").find("\"eta_s\"") != std::string::npos;
  }, 60s);
  INFO(read_text(dir / "events.log"));
  CHECK(announced);
  CHECK(again.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("lifecycle e2e: serve --watch-config reloads when a profile file changes", "[lifecycle][e2e]") {
  TempDir dir("life-watch");
  write_config(dir, standin_binary().string(), "");
  Serve serve(dir / "kevlaya.yaml", {}, {"--watch-config"});
  Proc events({orch_binary().string(), "events", "--url", url(serve)}, dir / "events.log");
  const auto laya_yaml = dir / "profiles/laya.yaml";
  write_text(laya_yaml, replaced(read_text(laya_yaml), "ctx: 256", "ctx: 512"));
  CHECK(!serve.proc().wait_for(std::regex("reload: changed: laya"), 30s).empty());
  CHECK(!events.wait_for(std::regex("reload changed: laya")).empty());
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

// Load ETA (issue 33): the median of the child's last loads, kept in the state directory beside the
// ledger's calibration, so the first load after a restart already shows how long it will take.
// Also guards the test kit's Serve against reading an earlier serve's port from a shared log.
TEST_CASE("lifecycle e2e: a starting child shows eta_s from its past loads, also after a restart", "[eta][lifecycle][e2e]") {
  TempDir dir("life-eta");
  write_config(dir, standin_binary().string(), "preload: [kev]\n", "extra_args: [--fake-load-ms, '3000']\n");
  const auto eta_of = [](const json& p) {
    const auto lp = p.value("load_progress", json());
    return lp.is_object() ? lp.value("eta_s", json()) : json();
  };
  {
    Serve serve(dir / "kevlaya.yaml");
    const auto first = profile(status_json(serve), "kev");
    INFO(first.dump());
    CHECK(first.value("state", "") == "starting");
    CHECK(eta_of(first).is_null());  // no load seen yet: no guess
    CHECK(eventually([&] { return state_of(serve, "kev") == "ready"; }, 60s));
    CHECK(eventually([&] { return std::filesystem::exists(dir / "state/ledger-load-times.json"); }));
    CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  }
  Serve again(dir / "kevlaya.yaml");
  const auto raw = cli("status --json --url " + url(again));
  INFO(raw.output);
  const auto st = profile(json::parse(raw.output, nullptr, false), "kev");
  CHECK(st.value("state", "") == "starting");
  const auto eta = eta_of(st);
  REQUIRE(eta.is_number());
  CHECK(eta.get<double>() > 1.0);  // a load of 3 s and more, not long begun
  auto cli_status = cli("status --url " + url(again));
  CHECK(cli_status.output.find("s left") != std::string::npos);
  CHECK(eventually([&] { return state_of(again, "kev") == "ready"; }, 60s));
  CHECK(again.proc().signal_and_wait(SIGTERM) == 0);
}
