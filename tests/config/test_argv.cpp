#include <catch2/catch.hpp>

#include "config/fixture.hpp"
#include "config/flags.hpp"

using namespace kevlaya::test;

namespace {

cfg::Profile kev() {
  cfg::Profile p;
  p.name = "kev";
  p.model = "/models/kev-7b.Q4_K_S.gguf";
  p.ngl = 32;
  p.ctx = 2048;
  p.parallel = 1;
  return p;
}

using Argv = std::vector<std::string>;

}  // namespace

TEST_CASE("argv: the reference Kev profile gives the golden command", "[config]") {
  CHECK(cfg::build_argv(kev(), "127.0.0.1", 8101) ==
        Argv{"llama-server", "-m", "/models/kev-7b.Q4_K_S.gguf", "-ngl", "32", "-c", "2048",
             "-np", "1", "--host", "127.0.0.1", "--port", "8101", "--alias", "kev", "--metrics", "-lv", "4"});
}

TEST_CASE("argv: the reference Kev profile file gives the golden command", "[config]") {
  TempDir d("cfg");
  write_text(d / "profiles/kev.yaml", read_text(source_dir() / "profiles/kev.yaml"));
  write_text(d / "models/kev-7b.Q4_K_S.gguf", "x");
  ::unsetenv("KEVLAYA_MODELS");
  const auto r = cfg::load_profile_file(d / "profiles/kev.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  const std::string model = (d.path() / "models/kev-7b.Q4_K_S.gguf").string();
  CHECK(cfg::build_argv(r.config.profiles[0], "127.0.0.1", 8101) ==
        Argv{"llama-server", "-m", model, "-ngl", "32", "-c", "2048", "-np", "1", "--host",
             "127.0.0.1", "--port", "8101", "--alias", "kev", "--metrics", "-lv", "4"});
}

TEST_CASE("argv: optional flags follow in a fixed order", "[config]") {
  auto p = kev();
  p.ngl = -1;
  p.batch = 256;
  p.cache_type_k = "q8_0";
  p.cache_type_v = "q4_0";
  p.flash_attn = false;
  p.lora = {{"a", "/l/a.gguf", 0.5}, {"b", "/l/b.gguf", 1.0}};
  p.alias = {"decider"};
  p.extra_args = {"--temp", "0.2", "--system-prompt", "two words"};
  CHECK(cfg::build_argv(p, "127.0.0.1", 9) ==
        Argv{"llama-server", "-m", "/models/kev-7b.Q4_K_S.gguf", "-ngl", "all", "-c", "2048",
             "-np", "1", "--host", "127.0.0.1", "--port", "9", "--alias", "kev", "-b", "256",
             "-ctk", "q8_0", "-ctv", "q4_0", "-fa", "off", "--lora-scaled", "/l/a.gguf:0.5",
             "--lora-scaled", "/l/b.gguf:1", "--metrics", "-lv", "4", "--temp", "0.2", "--system-prompt", "two words"});
  p.flash_attn = true;
  const auto on = cfg::build_argv(p, "127.0.0.1", 9);
  CHECK(std::find(on.begin(), on.end(), "on") != on.end());
}

TEST_CASE("argv: llama-server children get -lv 4 unless the profile sets a verbosity", "[config]") {
  auto a = kev();
  const auto plain = cfg::build_argv(a, "127.0.0.1", 1);
  CHECK(Argv(plain.end() - 2, plain.end()) == Argv{"-lv", "4"});
  a.extra_args = {"--log-verbosity", "3"};
  const auto own = cfg::build_argv(a, "127.0.0.1", 1);
  CHECK(std::count(own.begin(), own.end(), "-lv") == 0);
  CHECK(Argv(own.end() - 2, own.end()) == Argv{"--log-verbosity", "3"});
  a.extra_args = {"--log-disable"};
  const auto off = cfg::build_argv(a, "127.0.0.1", 1);
  CHECK(std::count(off.begin(), off.end(), "-lv") == 0);
}

TEST_CASE("argv: llama-server children get --metrics unless the profile passes it", "[config]") {
  auto a = kev();
  const auto plain = cfg::build_argv(a, "127.0.0.1", 1);
  CHECK(std::count(plain.begin(), plain.end(), "--metrics") == 1);
  a.extra_args = {"--metrics"};
  const auto own = cfg::build_argv(a, "127.0.0.1", 1);
  CHECK(std::count(own.begin(), own.end(), "--metrics") == 1);
  CHECK(own.back() == "--metrics");
}

TEST_CASE("argv: a command backend fills its template", "[config]") {
  auto p = kev();
  p.backend = cfg::Backend::command;
  p.command = {"/opt/srv dir/server", "--model={model}", "--listen", "{host}:{port}", "-c", "{ctx}",
               "-ngl", "{ngl}", "--name", "{alias}"};
  CHECK(cfg::build_argv(p, "127.0.0.1", 7000) ==
        Argv{"/opt/srv dir/server", "--model=/models/kev-7b.Q4_K_S.gguf", "--listen",
             "127.0.0.1:7000", "-c", "2048", "-ngl", "32", "--name", "kev"});
}

TEST_CASE("argv: remote profiles start nothing", "[config]") {
  auto p = kev();
  p.backend = cfg::Backend::remote;
  p.url = "http://x";
  CHECK(cfg::build_argv(p, "127.0.0.1", 1).empty());
}

TEST_CASE("argv: shell_join quotes only what needs it", "[config]") {
  CHECK(cfg::shell_join({"llama-server", "-m", "/a b/c.gguf", "it's", "", "x=1"}) ==
        "llama-server -m '/a b/c.gguf' 'it'\\''s' '' x=1");
}

TEST_CASE("argv: expand_env handles defaults, escapes and errors", "[config]") {
  ::setenv("KEVLAYA_T1", "v", 1);
  ::unsetenv("KEVLAYA_T2");
  std::string err;
  CHECK(cfg::expand_env("a${KEVLAYA_T1}b${KEVLAYA_T2:-d}c$${X}", &err) == "avbdc${X}");
  CHECK(err.empty());
  cfg::expand_env("${KEVLAYA_T2}", &err);
  CHECK(err.find("'KEVLAYA_T2' is not set") != std::string::npos);
  err.clear();
  cfg::expand_env("${bad-name}", &err);
  CHECK(err.find("invalid variable reference '${bad-name}'") != std::string::npos);
}

TEST_CASE("argv: per-spawn words (slot folder, child key) come from SpawnArgs, before -lv", "[config]") {
  const auto a = cfg::build_argv(kev(), cfg::SpawnArgs{"127.0.0.1", "9", "/s/slots/kev", "k3y"});
  CHECK(Argv(a.end() - 7, a.end()) ==
        Argv{"--slot-save-path", "/s/slots/kev", "--api-key", "k3y", "--metrics", "-lv", "4"});
  auto c = kev();
  c.backend = cfg::Backend::command;
  c.command = {"srv", "{port}"};
  CHECK(cfg::build_argv(c, cfg::SpawnArgs{"127.0.0.1", "9", "/s", "k3y"}) == Argv{"srv", "9"});  // not llama-server
}

TEST_CASE("flag table: every spelling and the --flag=value form find one entry", "[config]") {
  REQUIRE(cfg::find_flag("--n-gpu-layers") != nullptr);
  CHECK(cfg::find_flag("--n-gpu-layers") == cfg::find_flag("-ngl"));
  CHECK(cfg::find_flag("--ctx-size=4096")->key == "ctx");
  CHECK(cfg::find_flag("--temp") == nullptr);
  const auto uses = cfg::scan_flags({"--temp", "0.2", "--ubatch-size=128", "-kvu", "-lv"});
  REQUIRE(uses.size() == 3);
  CHECK(uses[0].flag->key == "ubatch");
  CHECK(uses[0].value == std::optional<std::string>("128"));
  CHECK_FALSE(uses[1].value);     // -kvu takes no value
  CHECK_FALSE(uses[2].value);     // -lv at the end: missing value
  for (const auto& f : cfg::llama_flags()) CHECK(cfg::find_flag(f.name) == &f);  // no spelling twice
}
