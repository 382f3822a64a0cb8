// Backend keys of a profile (command / remote) and the argv they give: every key that validates
// is used, every key of another backend is an error at its line:col.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "config/fixture.hpp"
#include "ledger/inputs.hpp"
#include "ledger/plan.hpp"

using namespace kevlaya::test;
using Argv = std::vector<std::string>;

TEST_CASE("backend command: template, env, health, stop and vram_mib are read", "[backends]") {
  TempDir dir("be-cfg");
  ::setenv("KEVLAYA_T_VLLM", "/opt/vllm/bin/vllm", 1);
  const auto f = write_profile(dir, "v.yaml", R"(name: kev
backend: command
model: Qwen/Qwen2.5-7B-Instruct
command: ["${KEVLAYA_T_VLLM}", serve, "{model}", --host, "{host}", --port, "{port}",
          --max-model-len, "{ctx}", --max-num-seqs, "{parallel}", --served-model-name, "{name}"]
env: {VLLM_LOGGING_LEVEL: INFO}
vram_mib: 5200
health: {path: /v1/models, status: 200, startup_timeout_s: 600}
stop: {signal: INT, grace_s: 20, command: [docker, stop, "kev-{port}"], timeout_s: 15}
ctx: 4096
parallel: 4
)");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& p = r.config.profiles.at(0);
  CHECK(p.model == "Qwen/Qwen2.5-7B-Instruct");  // an id, not a path next to the file
  CHECK(p.vram_mib == 5200);
  CHECK(p.health.path == "/v1/models");
  CHECK(p.stop.signal == "INT");
  CHECK(p.stop.command_timeout_s == 15);
  CHECK(cfg::build_argv(p, "127.0.0.1", 7001) ==
        Argv{"/opt/vllm/bin/vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--host", "127.0.0.1", "--port", "7001",
             "--max-model-len", "4096", "--max-num-seqs", "4", "--served-model-name", "kev"});
  CHECK(cfg::build_stop_argv(p, cfg::SpawnArgs{"127.0.0.1", "7001", {}, {}}, 42) == Argv{"docker", "stop", "kev-7001"});
}

TEST_CASE("backend command: a model path that starts with ./ must exist", "[backends]") {
  TempDir dir("be-cfg");
  const auto f = write_profile(dir, "c.yaml", "backend: command\nmodel: ./nope.gguf\ncommand: [srv, \"{model}\"]\n");
  CHECK(has_diag(cfg::load_profile_file(f), diag(f, 2, 8, "model file not found: " + (dir.path() / "nope.gguf").string())));
}

TEST_CASE("backend command: unknown placeholders are errors where they are written", "[backends]") {
  TempDir dir("be-cfg");
  const auto f = write_profile(dir, "c.yaml", "backend: command\ncommand: [srv, \"--port={prot}\", \"{pid}\"]\n"
                                              "stop: {command: [kill, \"{pid}\", \"{hots}\"]}\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  const auto text = dump(r);
  CHECK(text.find(diag(f, 2, 16, "command: unknown placeholder {prot} (did you mean '{port}'?); known: {model} {port} "
                                 "{host} {ctx} {ngl} {parallel} {alias} {name}\n")) != std::string::npos);
  CHECK(text.find(diag(f, 2, 33, "command: unknown placeholder {pid}")) != std::string::npos);  // stop.command only
  CHECK(text.find(diag(f, 3, 33, "stop.command: unknown placeholder {hots} (did you mean '{host}'?); known: {model} "
                                 "{port} {host} {ctx} {ngl} {parallel} {alias} {name} {pid}\n")) != std::string::npos);
  CHECK(r.error_count() == 3);
}

TEST_CASE("backend keys of another backend are errors, not ignored", "[backends]") {
  TempDir dir("be-cfg");
  const auto a = write_profile(dir, "a.yaml", "model: m.gguf\nvram_mib: 100\nstop: {command: [x]}\n"
                                              "health: {ready_line: up}\napi_key: k\n");
  const auto r = cfg::load_profile_file(a);
  INFO(dump(r));
  CHECK(has_diag(r, diag(a, 2, 11, "'vram_mib' is only used with backend 'command' (the ledger reads llama-server's GGUF)")));
  CHECK(has_diag(r, diag(a, 3, 17, "'stop.command' is only used with backend 'command'")));
  CHECK(has_diag(r, diag(a, 4, 22, "'health.ready_line' is only used with backend 'command'")));
  CHECK(has_diag(r, diag(a, 5, 10, "'api_key'/'api_key_file' are only used with backend 'remote'")));
  const auto c = write_profile(dir, "c.yaml", "backend: command\nbinary: /bin/true\ncommand: [/bin/sleep, \"9\"]\n");
  CHECK(has_diag(cfg::load_profile_file(c),
                 diag(c, 2, 9, "'binary' is not used with backend 'command': the first word of 'command' is the program")));
  const auto rm = write_profile(dir, "r.yaml", "backend: remote\nurl: http://h:1\nbinary: /bin/sleep\nvram_mib: 5\n");
  const auto rr = cfg::load_profile_file(rm);
  CHECK(has_diag(rr, diag(rm, 3, 9, "'binary' is not used with backend 'remote': nothing is started")));
  CHECK(has_diag(rr, diag(rm, 4, 11, "'vram_mib' is only used with backend 'command' (a remote holds no local GPU memory)")));
}

TEST_CASE("backend remote: url, key file and the remote's model name", "[backends]") {
  TempDir dir("be-cfg");
  write_text(dir / "key", "\n  s3cret  \n");
  const auto f = write_profile(dir, "r.yaml", "name: big\nbackend: remote\nurl: http://10.0.0.7:8080/door/\n"
                                              "model: qwen2.5-72b\napi_key_file: key\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  REQUIRE(r.error_count() == 0);
  const auto& p = r.config.profiles.at(0);
  CHECK(p.remote_model == "qwen2.5-72b");
  CHECK(p.model.empty());
  CHECK(p.api_key == "s3cret");
  const auto u = cfg::parse_http_url(p.url, nullptr);
  REQUIRE(u);
  CHECK(u->host == "10.0.0.7");
  CHECK(u->port == 8080);
  CHECK(u->base_path == "/door");
  CHECK(cfg::build_argv(p, "127.0.0.1", 1).empty());
  const auto s = write_profile(dir, "s.yaml", "backend: remote\nurl: https://x\n");
  CHECK(has_diag(cfg::load_profile_file(s),
                 diag(s, 2, 6, "url: https is not supported: use http:// inside a private network, or a local TLS proxy")));
  const auto bad = write_profile(dir, "b.yaml", "backend: remote\nurl: 10.0.0.7:8080\n");
  CHECK(has_diag(cfg::load_profile_file(bad), diag(bad, 2, 6, "url: expected http://HOST[:PORT][/PATH], got '10.0.0.7:8080'")));
}

TEST_CASE("backend command: the ledger plans with the declared vram_mib", "[backends]") {
  namespace lg = kevlaya::ledger;
  TempDir dir("be-ledger");
  cfg::Config c;
  for (const char* name : {"a", "b"}) {
    cfg::Profile p;
    p.name = name;
    p.backend = cfg::Backend::command;
    p.command = {"srv"};
    p.vram_mib = 3000;
    c.profiles.push_back(p);
  }
  cfg::Profile unpriced;  // no vram_mib: never co-resides with anything
  unpriced.name = "u";
  unpriced.backend = cfg::Backend::command;
  unpriced.command = {"srv"};
  c.profiles.push_back(unpriced);
  const auto g = lg::gather(c);
  REQUIRE(g);
  REQUIRE(g->profiles.size() == 2);
  CHECK(g->skipped == std::vector<std::string>{"u"});
  lg::PlanOptions opt;
  opt.overhead = 100 * lg::kMiB;
  opt.budget = 8000 * lg::kMiB;
  const auto both = lg::make_plan(g->profiles, opt);
  CHECK(both.mode == lg::Mode::co_resident);
  CHECK(both.allowed_sets == std::vector<std::vector<std::string>>{{"a", "b"}});
  CHECK(both.profiles[0].effective.total_gpu() == 3100 * lg::kMiB);
  CHECK(both.shared_children().empty());  // no shared base between command servers
  opt.budget = 5000 * lg::kMiB;
  const auto one = lg::make_plan(g->profiles, opt);
  CHECK(one.mode == lg::Mode::rotate);
  CHECK(one.allowed_sets == std::vector<std::vector<std::string>>{{"a"}, {"b"}});
  opt.budget = 2000 * lg::kMiB;
  const auto none = lg::make_plan(g->profiles, opt);
  CHECK_FALSE(none.ok());
  CHECK(none.profiles[0].too_big == "declared vram_mib (3000.00 MiB)");
}
