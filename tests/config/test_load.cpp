#include <catch2/catch.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

const char* kPipeline = R"(name: dv
stages:
  - name: decide
    model: kev
    user: "pick for {{input}} among {{candidates}} {{verify.feedback}}"
    output: {choices: [a, b]}
  - name: verify
    model: laya
    user: "check {{decide.output}}"
    output: {choices: [pass, reject]}
)";

// kevlaya.yaml + profiles/{kev,laya}.yaml + pipelines/dv.yaml, all valid.
void write_tree(const TempDir& d) {
  write_text(d / "kevlaya.yaml", "gpu: {vram_mib: 6144}\nlisten: {port: 8181}\n");
  write_text(d / "models/kev.gguf", "x");
  write_text(d / "models/laya.gguf", "x");
  write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../models/kev.gguf\nngl: 32\n");
  write_text(d / "profiles/laya.yaml", "name: laya\nmodel: ../models/laya.gguf\nalias: verifier\n");
  write_text(d / "pipelines/dv.yaml", kPipeline);
}

}  // namespace

TEST_CASE("load: a full tree loads with paths relative to the config file", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& o = r.config.orch;
  CHECK(o.profiles_dir == (d.path() / "profiles").lexically_normal());
  CHECK(o.pipelines_dir == (d.path() / "pipelines").lexically_normal());
  CHECK(o.state_dir == (d.path() / "var/state").lexically_normal());
  CHECK(o.log_dir == (d.path() / "var/log").lexically_normal());
  CHECK(o.gpu.vram_mib == std::optional<std::int64_t>(6144));
  CHECK(o.listen.host == "127.0.0.1");
  CHECK(o.listen.port == 8181);
  CHECK(o.residency == cfg::Residency::auto_);
  REQUIRE(r.config.profiles.size() == 2);
  REQUIRE(r.config.pipelines.size() == 1);
  CHECK(r.config.find_profile("verifier")->name == "laya");
  CHECK(r.config.find_profile("nobody") == nullptr);
  CHECK(r.config.find_pipeline("dv")->stages.size() == 2);
}

TEST_CASE("load: orchestrator settings are read", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  write_text(d / "kevlaya.yaml", R"(profiles_dir: profiles
state_dir: /tmp/kv-state
gpu: {vram_mib: auto, reserve_mib: 128, overhead_mib: 300}
listen: {host: 0.0.0.0, port: 9000}
api_keys: [k1]
queue: {max_depth: 8, max_wait_s: 10}
residency: co-resident
scheduling: {max_wait_before_swap_ms: 100, min_residency_ms: 50, drain_timeout_s: 5}
prefetch: {enabled: false, min_available_mib: 10}
limits: {max_body_bytes: 1000, max_connections: 4, read_timeout_s: 3, idle_timeout_s: 4}
)");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  const auto& o = r.config.orch;
  CHECK_FALSE(o.gpu.vram_mib.has_value());
  CHECK(o.gpu.reserve_mib == 128);
  CHECK(o.state_dir == "/tmp/kv-state");
  CHECK(o.api_keys == std::vector<std::string>{"k1"});
  CHECK(o.queue.max_depth == 8);
  CHECK(o.residency == cfg::Residency::co_resident);
  CHECK(o.scheduling.min_residency_ms == 50);
  CHECK_FALSE(o.prefetch.enabled);
  CHECK(o.limits.idle_timeout_s == 4);
}

TEST_CASE("load: an empty path means defaults in the current directory", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  const auto old = std::filesystem::current_path();
  std::filesystem::current_path(d.path());
  const auto r = cfg::load("");
  std::filesystem::current_path(old);
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.orch.file.empty());
  CHECK(r.config.orch.listen.port == 8080);
  CHECK(r.config.profiles.size() == 2);
  CHECK(r.config.pipelines.size() == 1);
}

TEST_CASE("load: two profiles named kev are reported at both places", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  write_text(d / "profiles/zz.yaml", "model: ../models/kev.gguf\nname: kev\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  const auto at = [&](const char* f, int l, int c) {
    return cfg::display_path((d.path() / f).lexically_normal()) + ":" + std::to_string(l) + ":" +
           std::to_string(c);
  };
  CHECK(has_diag(r, diag(d / "profiles/kev.yaml", 1, 7,
                         "duplicate profile name 'kev' (also defined at " + at("profiles/zz.yaml", 2, 7) + ")")));
  CHECK(has_diag(r, diag(d / "profiles/zz.yaml", 2, 7,
                         "duplicate profile name 'kev' (also defined at " + at("profiles/kev.yaml", 1, 7) + ")")));
  CHECK(r.error_count() == 2);
}

TEST_CASE("load: an alias that names another profile is a collision", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  write_text(d / "profiles/laya.yaml", "name: laya\nmodel: ../models/laya.gguf\nalias: [x, kev]\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  CHECK(r.error_count() == 1);
  REQUIRE_FALSE(r.ok());
  CHECK(dump(r).find("profiles/laya.yaml:3:12: error: alias 'kev' of profile 'laya' collides "
                             "with profile 'kev'") != std::string::npos);
}

TEST_CASE("load: a pipeline stage naming an unknown model suggests the closest", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  std::string text = kPipeline;
  text.replace(text.find("model: kev"), 10, "model: kevv");
  write_text(d / "pipelines/dv.yaml", text);
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  CHECK(formatted(r) == std::vector<std::string>{
      diag(d / "pipelines/dv.yaml", 4, 12, "stage 'decide' names unknown model 'kevv' (did you mean 'kev'?)")});
}

TEST_CASE("load: stage models may use an alias", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  std::string text = kPipeline;
  text.replace(text.find("model: laya"), 11, "model: verifier");
  write_text(d / "pipelines/dv.yaml", text);
  CHECK(cfg::load(d / "kevlaya.yaml").ok());
}

TEST_CASE("load: a missing profiles directory and bad settings are all reported", "[config]") {
  TempDir d("cfg");
  write_text(d / "kevlaya.yaml", "profiles_dir: nowhere\nlisten: {port: 0}\nresidency: co_resident\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  const auto file = d / "kevlaya.yaml";
  CHECK(has_diag(r, cfg::display_path((d.path() / "kevlaya.yaml").lexically_normal()) +
                        ": error: profiles directory not found: " + (d.path() / "nowhere").string()));
  CHECK(has_diag(r, diag(file, 2, 16, "listen.port must be between 1 and 65535, got 0")));
  CHECK(has_diag(r, diag(file, 3, 12, "residency must be one of auto, rotate, co-resident, got "
                                      "'co_resident' (did you mean 'co-resident'?)")));
}

TEST_CASE("load: a missing config file is one error", "[config]") {
  TempDir d("cfg");
  const auto r = cfg::load(d / "nope.yaml");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message == "file not found");
}

TEST_CASE("load: diagnostics of several files are all collected", "[config]") {
  TempDir d("cfg");
  write_tree(d);
  write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../models/kev.gguf\nctx: \"lots\"\n");
  write_text(d / "profiles/laya.yaml", "name: laya\nmodel: ../models/laya.gguf\ncontxt: 1\n");
  const auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  CHECK(r.error_count() == 2);
}

TEST_CASE("load: the repository's tiny sample config passes when its models exist", "[config]") {
  TempDir d("cfg");
  const auto src = source_dir();
  for (const char* f : {"kevlaya.tiny.yaml", "profiles/tiny/kev.yaml", "profiles/tiny/laya.yaml",
                        "pipelines/decide-verify.yaml"})
    write_text(d / f, read_text(src / f));
  write_text(d / "var/models/kev-tiny.gguf", "GGUF");
  write_text(d / "var/models/laya-tiny.gguf", "GGUF");
  const auto r = cfg::load(d / "kevlaya.tiny.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.diagnostics.empty());
  CHECK(r.config.profiles.size() == 2);
  REQUIRE(r.config.pipelines.size() == 1);
  const auto& pl = r.config.pipelines[0];
  CHECK(pl.name == "decide-verify");
  CHECK(pl.max_rounds == 3);
  REQUIRE(pl.stages.size() == 2);
  CHECK(pl.stages[0].role == cfg::StageRole::decide);
  CHECK(pl.stages[1].role == cfg::StageRole::verify);
  CHECK(pl.stages[1].model == "laya");
}

TEST_CASE("load: the reference sample config reports exactly its missing models", "[config]") {
  TempDir d("cfg");
  const auto src = source_dir();
  for (const char* f : {"kevlaya.yaml", "profiles/kev.yaml", "profiles/laya.yaml",
                        "pipelines/decide-verify.yaml"})
    write_text(d / f, read_text(src / f));
  ::setenv("KEVLAYA_MODELS", (d.path() / "models").c_str(), 1);
  auto r = cfg::load(d / "kevlaya.yaml");
  INFO(dump(r));
  CHECK(r.error_count() == 2);
  CHECK(has_diag(r, diag(d / "profiles/kev.yaml", 4, 8, "model file not found: " +
                                                          (d.path() / "models/kev-7b.Q4_K_S.gguf").string())));
  write_text(d / "models/kev-7b.Q4_K_S.gguf", "x");
  write_text(d / "models/laya-3b.Q4_K_S.gguf", "x");
  r = cfg::load(d / "kevlaya.yaml");
  ::unsetenv("KEVLAYA_MODELS");
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.profiles[0].ngl == 32);
  CHECK(r.config.profiles[1].ngl == -1);
  CHECK(r.config.orch.gpu.vram_mib == std::optional<std::int64_t>(6144));
}
