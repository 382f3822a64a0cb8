#include <catch2/catch.hpp>
#include <cstdlib>

#include "config/fixture.hpp"

using namespace kevlaya::test;

TEST_CASE("profile: a valid profile loads with defaults and an absolute model path", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  REQUIRE(r.config.profiles.size() == 1);
  const auto& p = r.config.profiles[0];
  CHECK(p.name == "kev");
  CHECK(p.model == (dir.path() / "m.gguf").lexically_normal());
  CHECK(p.model.is_absolute());
  CHECK(p.backend == cfg::Backend::llama_server);
  CHECK(p.binary == "llama-server");
  CHECK(p.ctx == 2048);
  CHECK(p.parallel == 1);
  CHECK(p.ngl == -1);
  CHECK(p.health.first_probe_ms <= 25);
  CHECK(p.health.interval_ms <= 50);
  CHECK_FALSE(p.flash_attn.has_value());
}

TEST_CASE("profile: every field is read", "[config]") {
  TempDir dir("cfg");
  write_text(dir / "a.lora", "x");
  const auto f = write_profile(dir, "p.yaml", R"(name: laya
binary: /opt/llama-server
model: ./m.gguf
quant: Q4_K_S
ngl: all
ctx: 4096
parallel: 2
batch: 512
cache_type_k: q8_0
cache_type_v: q4_0
flash_attn: true
lora:
  - {name: terse, path: a.lora, scale: 0.5}
alias: [laya-3b, verifier]
extra_args: ["--temp", "0.2"]
env: {OMP_NUM_THREADS: "2"}
port: 9001
health: {path: /health, first_probe_ms: 10, interval_ms: 30}
stop: {grace_s: 2.5}
restart: {max_restarts: 3, window_s: 60, backoff_initial_ms: 100, backoff_max_s: 5, cooldown_s: 30}
shared_base: false
slot_cache: {enabled: true, max_bytes: 1048576}
)");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& p = r.config.profiles.at(0);
  CHECK(p.binary == "/opt/llama-server");
  CHECK(p.ngl == -1);
  CHECK(p.ctx == 4096);
  CHECK(p.parallel == 2);
  CHECK(p.batch == 512);
  CHECK(p.cache_type_k == "q8_0");
  CHECK(p.cache_type_v == "q4_0");
  CHECK(p.flash_attn == std::optional<bool>(true));
  REQUIRE(p.lora.size() == 1);
  CHECK(p.lora[0].name == "terse");
  CHECK(p.lora[0].path == (dir.path() / "a.lora").lexically_normal());
  CHECK(p.lora[0].scale == 0.5);
  CHECK(p.alias == std::vector<std::string>{"laya-3b", "verifier"});
  CHECK(p.env.at("OMP_NUM_THREADS") == "2");
  CHECK(p.port == std::optional<int>(9001));
  CHECK(p.health.first_probe_ms == 10);
  CHECK(p.stop.grace_s == 2.5);
  CHECK(p.restart.cooldown_s == 30);
  CHECK(p.shared_base == std::optional<bool>(false));
  CHECK(p.slot_cache.enabled);
  CHECK(p.slot_cache.max_bytes == 1048576);
}

TEST_CASE("profile: tab indentation is a syntax error at the tab", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nhealth:\n\tpath: /health\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 3, 1, "tab character in indentation; YAML indentation must use spaces")));
  CHECK(r.diagnostics.size() == 1);
}

TEST_CASE("profile: other YAML syntax errors carry yaml-cpp's location", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nalias: [a, b\n");
  const auto r = cfg::load_profile_file(f);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].loc.line >= 2);
  CHECK(r.diagnostics[0].message.rfind("YAML syntax error: ", 0) == 0);
}

TEST_CASE("profile: a string where an integer belongs names both", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\nctx: \"lots\"\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 3, 6, "ctx: expected an integer, got string \"lots\"")));
  CHECK_FALSE(r.ok());
}

TEST_CASE("profile: out-of-range values are errors at the value", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml",
                               "name: kev\nmodel: m.gguf\nngl: -5\nctx: 100\nparallel: 0\nport: 70000\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 3, 6, "ngl must be a number of layers >= 0 or 'all', got -5")));
  CHECK(has_diag(r, diag(f, 4, 6, "ctx must be between 256 and 1048576, got 100")));
  CHECK(has_diag(r, diag(f, 5, 11, "parallel must be between 1 and 256, got 0")));
  CHECK(has_diag(r, diag(f, 6, 7, "port must be between 1 and 65535, got 70000")));
  CHECK(r.error_count() == 4);
}

TEST_CASE("profile: an unknown key suggests the closest known one", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\ncontxt: 2048\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 3, 1, "unknown key 'contxt' in profile (did you mean 'ctx'?)")));
}

TEST_CASE("profile: a missing model file is reported with its absolute path", "[config]") {
  TempDir dir("cfg");
  const auto f = dir / "kev.yaml";
  write_text(f, "name: kev\nmodel: models/none.gguf\n");
  const auto r = cfg::load_profile_file(f);
  const auto abs = (dir.path() / "models/none.gguf").lexically_normal();
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 2, 8, "model file not found: " + abs.string())));
}

TEST_CASE("profile: all problems of a file are reported at once", "[config]") {
  TempDir dir("cfg");
  const auto f = dir / "kev.yaml";
  write_text(f, "name: kev\nmodel: none.gguf\nngl: -1\nctx: big\ncache_type_k: q9\nflash_attn: maybe\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(r.error_count() == 5);
  CHECK(has_diag(r, diag(f, 6, 13, "flash_attn: expected true or false, got string \"maybe\"")));
}

TEST_CASE("profile: an empty file is an empty document at 1:1", "[config]") {
  TempDir dir("cfg");
  const auto f = dir / "kev.yaml";
  write_text(f, "");
  const auto r = cfg::load_profile_file(f);
  CHECK(formatted(r) == std::vector<std::string>{diag(f, 1, 1, "empty document")});
  write_text(f, "# only a comment\n");
  CHECK(formatted(cfg::load_profile_file(f)) == std::vector<std::string>{diag(f, 1, 1, "empty document")});
}

TEST_CASE("profile: non-UTF-8 bytes are reported at the first bad byte", "[config]") {
  TempDir dir("cfg");
  const auto f = dir / "kev.yaml";
  write_text(f, "name: kev\nquant: Q4_\xe9t\n");
  const auto r = cfg::load_profile_file(f);
  CHECK(formatted(r) ==
        std::vector<std::string>{diag(f, 2, 11, "invalid UTF-8 (byte 0xe9); configuration files must be UTF-8 text")});
}

TEST_CASE("profile: valid multi-byte UTF-8 is accepted", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\nquant: \"Q4 — ☃ 😀\"\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(r.ok());
}

TEST_CASE("profile: ${VAR} and ${VAR:-default} expand in strings and numbers", "[config]") {
  TempDir dir("cfg");
  ::setenv("KEVLAYA_TEST_MODELDIR", dir.path().c_str(), 1);
  ::unsetenv("KEVLAYA_TEST_UNSET");
  const auto f = write_profile(dir, "kev.yaml",
                               "name: kev\nmodel: ${KEVLAYA_TEST_MODELDIR}/m.gguf\n"
                               "ctx: ${KEVLAYA_TEST_UNSET:-1024}\nbinary: ${KEVLAYA_TEST_UNSET:-srv}\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.profiles[0].model == (dir.path() / "m.gguf").lexically_normal());
  CHECK(r.config.profiles[0].ctx == 1024);
  CHECK(r.config.profiles[0].binary == "srv");
}

TEST_CASE("profile: an unset ${VAR} without default is an error at its value", "[config]") {
  TempDir dir("cfg");
  ::unsetenv("KEVLAYA_TEST_UNSET");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\nbinary: ${KEVLAYA_TEST_UNSET}/srv\n");
  const auto r = cfg::load_profile_file(f);
  CHECK(has_diag(r, diag(f, 3, 9, "binary: environment variable 'KEVLAYA_TEST_UNSET' is not set "
                                  "(write ${KEVLAYA_TEST_UNSET:-default} to give a default)")));
}

TEST_CASE("profile: conflicting backend options are errors", "[config]") {
  TempDir dir("cfg");
  const auto remote = write_profile(dir, "r.yaml", "name: r\nbackend: remote\n");
  CHECK(has_diag(cfg::load_profile_file(remote),
                 diag(remote, 2, 10, "backend 'remote' needs 'url' (the base URL of a server kevlaya-orch does not start)")));
  const auto cmd = write_profile(dir, "c.yaml", "name: c\nbackend: command\nmodel: m.gguf\n");
  CHECK(has_diag(cfg::load_profile_file(cmd),
                 diag(cmd, 2, 10, "backend 'command' needs 'command' (the argv template to start the server)")));
  const auto bad = write_profile(dir, "b.yaml", "name: b\nbackend: llama_server\nmodel: m.gguf\n");
  CHECK(has_diag(cfg::load_profile_file(bad),
                 diag(bad, 2, 10, "backend must be one of llama-server, command, remote, got 'llama_server' (did you mean 'llama-server'?)")));
  const auto ok = write_profile(dir, "ok.yaml", "name: ok\nbackend: remote\nurl: http://10.0.0.2:8080\n");
  CHECK(cfg::load_profile_file(ok).ok());
}

TEST_CASE("profile: a missing LoRA file and a port in extra_args are errors", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "kev.yaml",
                               "name: kev\nmodel: m.gguf\nlora:\n  - path: x.lora\nextra_args: [--port, \"9\"]\n");
  const auto r = cfg::load_profile_file(f);
  INFO(dump(r));
  CHECK(has_diag(r, diag(f, 4, 11, "LoRA file not found: " + (dir.path() / "x.lora").lexically_normal().string())));
  CHECK(r.error_count() == 2);
}

TEST_CASE("profile: the name defaults to the file name", "[config]") {
  TempDir dir("cfg");
  const auto f = write_profile(dir, "laya.yaml", "model: m.gguf\n");
  const auto r = cfg::load_profile_file(f);
  REQUIRE(r.ok());
  CHECK(r.config.profiles[0].name == "laya");
}
