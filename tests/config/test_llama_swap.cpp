// `import llama-swap`: every llama-swap key the import maps, on a configuration written here, and
// the report of the rest with its source line; the output passes the loader (what `check` runs).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "config/emit.hpp"
#include "config/llama_swap.hpp"
#include "fixture.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

const config::Profile& named(const config::SwapImport& im, const std::string& n) {
  for (const auto& p : im.profiles)
    if (p.name == n) return p;
  FAIL("no profile " << n);
  throw 0;
}

std::string report(const config::SwapImport& im) {
  std::string s;
  for (const auto& d : im.report) s += d.format() + "\n";
  return s;
}

// Line by line, so the test can name the line each report entry must point at.
const char* kConfig = R"(healthCheckTimeout: 90
globalTTL: 120
logLevel: debug
startPort: 10001
macros:
  llama: /usr/bin/llama-server --port ${PORT}
  ctx: 4096
  common: "${llama} -ngl 99"
  home: "${env.KEVLAYA_SWAP_TEST_HOME}"
apiKeys:
  - sk-plain
  - "${env.SWAP_KEY}"
models:
  "qwen:7b":
    macros:
      ctx: 8192
    cmd: |
      # comment lines go
      ${common}
      -m "${home}/qwen 7b.gguf" -c ${ctx}
      -np 2 -b 512 -ctk q8_0 -ctv q8_0 -fa on
      --lora-scaled ${home}/style.gguf:0.5 --slot-save-path /tmp/slots
      -ts 1,1 --alias ${MODEL_ID} --api-key secret
      --jinja -ub 256 --temp 0.7
    env: ["CUDA_VISIBLE_DEVICES=1,0", "HF_HOME=/cache"]
    ttl: 0
    aliases:
      - gpt-4o-mini
      - id: qwen
        name: Qwen
        unlisted: true
    filters:
      stripParams: "temperature"
  vllm:
    cmd: vllm serve org/model --port ${PORT} --served-model-name ${MODEL_ID}
    cmdStop: docker stop ${MODEL_ID} --pid ${PID}
    proxy: http://127.0.0.1:${PORT}
    checkEndpoint: /v1/models
    ttl: -1
    unlisted: true
  fixed:
    cmd: /opt/server --listen 9001
    proxy: http://127.0.0.1:9001
    checkEndpoint: none
groups:
  always:
    persistent: true
    swap: false
    members: [vllm]
matrix:
  vars: {q: "qwen:7b"}
hooks:
  on_startup:
    preload: ["qwen:7b"]
peers:
  lan:
    proxy: http://10.0.0.2:8080
    apiKey: ${env.LAN_KEY}
    models: [llama-3-8b, org/other]
  cloud:
    proxy: https://example.invalid/api
    models: [x]
)";

}  // namespace

TEST_CASE("import llama-swap: cmd flags become typed keys through the flag table, the rest extra_args") {
  test::TempDir dir("swap-import");
  ::setenv("KEVLAYA_SWAP_TEST_HOME", dir.path().c_str(), 1);
  test::write_text(dir / "swap.yaml", kConfig);
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  INFO(report(im));
  REQUIRE(im.errors.empty());
  const auto& q = named(im, "qwen-7b");
  CHECK(q.backend == config::Backend::llama_server);
  CHECK(q.binary == "/usr/bin/llama-server");
  CHECK(q.model == "${KEVLAYA_SWAP_TEST_HOME}/qwen 7b.gguf");  // ${env.X}: a reference read at load; quotes kept the space
  CHECK(q.ngl == 99);  // from a macro that uses a macro
  CHECK(q.ctx == 8192);  // the model's macro overrides the global one
  CHECK(q.parallel == 2);
  CHECK(q.batch == 512);
  CHECK(q.cache_type_k == "q8_0");
  CHECK(q.cache_type_v == "q8_0");
  CHECK(q.flash_attn == true);
  REQUIRE(q.lora.size() == 1);
  CHECK(q.lora[0].path == "${KEVLAYA_SWAP_TEST_HOME}/style.gguf");
  CHECK(q.lora[0].scale == 0.5);
  CHECK(q.slot_cache.enabled);
  CHECK(q.extra_args == std::vector<std::string>{"--jinja", "-ub", "256", "--temp", "0.7"});
  CHECK(q.gpu == std::vector<int>{0, 1});  // CUDA_VISIBLE_DEVICES is the placement's: gpu: [0, 1]
  CHECK(q.env == std::map<std::string, std::string>{{"HF_HOME", "/cache"}});
  CHECK(q.idle_unload_s == 0);  // ttl 0: never
  CHECK(q.alias == std::vector<std::string>{"gpt-4o-mini", "qwen"});
  CHECK(q.health.startup_timeout_s == 90);  // healthCheckTimeout
}

TEST_CASE("import llama-swap: other servers become command profiles with {port}, {pid} and their health path") {
  test::TempDir dir("swap-import-cmd");
  ::setenv("KEVLAYA_SWAP_TEST_HOME", dir.path().c_str(), 1);
  test::write_text(dir / "swap.yaml", kConfig);
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  const auto& v = named(im, "vllm");
  CHECK(v.backend == config::Backend::command);
  CHECK(v.command == std::vector<std::string>{"vllm", "serve", "org/model", "--port", "{port}", "--served-model-name", "vllm"});
  CHECK(v.stop.command == std::vector<std::string>{"docker", "stop", "vllm", "--pid", "{pid}"});
  CHECK(v.health.path == "/v1/models");
  CHECK_FALSE(v.idle_unload_s);  // ttl -1: the global one
  CHECK(v.pin);                  // a persistent group's member
  const auto& f = named(im, "fixed");
  CHECK(f.port == 9001);  // a fixed proxy port is the command's own
  CHECK(f.health.path == "/health");
  const auto& lan = named(im, "llama-3-8b");
  CHECK(lan.backend == config::Backend::remote);
  CHECK(lan.url == "http://10.0.0.2:8080");
  CHECK(lan.api_key == "${LAN_KEY}");  // a reference, read when kevlaya-orch loads it
  CHECK(named(im, "org-other").remote_model == "org/other");
  CHECK(im.orchestrator_yaml.find("idle_unload_s: 120\n") != std::string::npos);
  CHECK(im.orchestrator_yaml.find("api_keys: [\"sk-plain\", \"${SWAP_KEY}\"]\n") != std::string::npos);
  CHECK(im.orchestrator_yaml.find("preload: [qwen-7b]\n") != std::string::npos);
  CHECK(im.orchestrator_yaml.find("residency") == std::string::npos);  // a group runs its members together
}

TEST_CASE("import llama-swap: the report names each key it could not map, with its line") {
  test::TempDir dir("swap-import-report");
  ::setenv("KEVLAYA_SWAP_TEST_HOME", dir.path().c_str(), 1);
  const auto file = dir / "swap.yaml";
  test::write_text(file, kConfig);
  const auto im = config::import_llama_swap(file);
  const std::string r = report(im);
  INFO(r);
  const auto at = [&](int line, int col, const std::string& msg) {
    return r.find(test::diag(file, line, col, msg, "warning")) != std::string::npos;
  };
  CHECK(at(3, 1, "'logLevel' is not mapped (kevlaya-orch's own: --log-level, /metrics, /events)"));
  CHECK(at(4, 12, "startPort: not needed; kevlaya-orch allocates each child's port (${PORT})"));
  CHECK(at(14, 3, "model 'qwen:7b' is served as 'qwen-7b': kevlaya-orch names are letters, digits, '.', '_' or '-'"));
  CHECK(at(17, 10, "cmd: -ts 1,1: dropped; kevlaya-orch places children on GPUs itself (profile key 'gpu')"));
  CHECK(at(17, 10, "cmd: --alias qwen:7b: dropped; kevlaya-orch passes --alias with the profile name"));
  CHECK(at(17, 10, "cmd: --api-key: dropped; each child gets its own per-start key (the door's keys are api_keys)"));
  CHECK(at(29, 9, "alias 'qwen': unlisted has no kevlaya-orch equivalent (every name is in /v1/models)"));
  CHECK(at(32, 5, "model key 'filters' is not mapped (no kevlaya-orch equivalent)"));
  CHECK(at(40, 15, "unlisted: no kevlaya-orch equivalent; 'vllm' is listed in /v1/models"));
  CHECK(at(44, 20, "checkEndpoint none: kevlaya-orch always waits for a ready server; health.path stays /health"));
  CHECK(at(47, 5, "group 'always' is persistent: its members are pinned (pin: true; the ledger must fit them beside the others)"));
  CHECK(r.find("matrix: the set DSL is not mapped") != std::string::npos);
  CHECK(at(61, 5, "peer 'cloud': https://example.invalid/api is not plain http (kevlaya-orch's remote profiles are http only); not imported"));
  CHECK(at(59, 26, "peer model 'org/other' is served as 'org-other': kevlaya-orch names are letters, digits, '.', '_' or '-'"));
}

TEST_CASE("import llama-swap: each written profile loads back into the same keys (config/emit.hpp)") {
  test::TempDir dir("swap-import-emit");
  ::setenv("KEVLAYA_SWAP_TEST_HOME", dir.path().c_str(), 1);
  test::write_text(dir / "swap.yaml", kConfig);
  test::write_text(dir / "qwen 7b.gguf", "GGUF dummy");
  test::write_text(dir / "style.gguf", "GGUF dummy");
  ::setenv("LAN_KEY", "lan-secret", 1);
  const auto im = config::import_llama_swap(dir / "swap.yaml");
  const auto expanded = [&](const fs::path& p) {
    std::string s = p.string();
    const std::string ref = "${KEVLAYA_SWAP_TEST_HOME}";
    if (s.rfind(ref, 0) == 0) s = dir.path().string() + s.substr(ref.size());
    return fs::path(s).lexically_normal();
  };
  for (const auto& p : im.profiles) {
    const auto file = dir / ("profiles/" + p.name + ".yaml");
    test::write_text(file, config::imported_profile_yaml(p, im));
    const auto r = config::load_profile_file(file);
    INFO(test::read_text(file) << test::dump(r));
    REQUIRE(test::errors(r).empty());
    const auto& q = r.config.profiles.at(0);
    CHECK(q.name == p.name);
    CHECK(q.backend == p.backend);
    CHECK(q.binary == p.binary);
    CHECK(q.model == expanded(p.model));  // the ${KEVLAYA_SWAP_TEST_HOME} reference, read at load
    CHECK(q.ngl == p.ngl);
    CHECK(q.ctx == p.ctx);
    CHECK(q.parallel == p.parallel);
    CHECK(q.batch == p.batch);
    CHECK(q.cache_type_k == p.cache_type_k);
    CHECK(q.flash_attn == p.flash_attn);
    REQUIRE(q.lora.size() == p.lora.size());
    for (std::size_t i = 0; i < q.lora.size(); ++i)
      CHECK((q.lora[i].path == expanded(p.lora[i].path) && q.lora[i].scale == p.lora[i].scale));
    CHECK(q.alias == p.alias);
    CHECK(q.extra_args == p.extra_args);
    CHECK(q.env == p.env);
    CHECK(q.gpu == p.gpu);
    CHECK(q.port == p.port);
    CHECK(q.command == p.command);
    CHECK(q.url == p.url);
    CHECK(q.api_key == (p.api_key.empty() ? "" : "lan-secret"));  // "${LAN_KEY}" is read from the environment
    CHECK(q.remote_model == p.remote_model);
    CHECK(q.idle_unload_s == p.idle_unload_s);
    CHECK(q.pin == p.pin);
    CHECK(q.slot_cache.enabled == p.slot_cache.enabled);
    CHECK(q.health.path == p.health.path);
    CHECK(q.health.startup_timeout_s == p.health.startup_timeout_s);
    CHECK(q.stop.command == p.stop.command);
  }
}

TEST_CASE("import llama-swap CLI: the written configuration passes check") {
  test::TempDir dir("swap-import-cli");
  const std::string models = (dir / "m.gguf").string();
  test::write_text(dir / "m.gguf", "GGUF dummy");  // the loader checks the file exists; check prices what it can
  test::write_text(dir / "swap.yaml", "models:\n  a:\n    cmd: llama-server -m " + models + " --port ${PORT} -c 1024\n"
                                      "    aliases: [b]\n  c:\n    cmd: python3 -m http.server ${PORT}\n"
                                      "groups:\n  g:\n    members: [a, c]\n");
  const auto orch = test::orch_binary().string();
  const auto r = test::run_command(orch + " import llama-swap " + (dir / "swap.yaml").string() + " --out " + (dir / "out").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("the result loads") != std::string::npos);
  CHECK(test::read_text(dir / "out/kevlaya.yaml").find("residency: rotate") != std::string::npos);  // one swap group
  const auto c = test::run_command(orch + " check " + (dir / "out/kevlaya.yaml").string());
  INFO(c.output);
  CHECK(c.exit_code == 0);
  const auto again = test::run_command(orch + " import llama-swap " + (dir / "swap.yaml").string() + " --out " + (dir / "out").string());
  CHECK(again.exit_code == 1);  // never over a user's files without --force
}

TEST_CASE("import llama-swap: a file that is not a llama-swap configuration is an error with its location") {
  test::TempDir dir("swap-import-bad");
  test::write_text(dir / "x.yaml", "profiles_dir: profiles\n");
  const auto im = config::import_llama_swap(dir / "x.yaml");
  REQUIRE(im.errors.size() == 1);
  CHECK(im.errors[0].message == "not a llama-swap configuration: no 'models' mapping");
  test::write_text(dir / "y.yaml", "models: [\n");
  CHECK_FALSE(config::import_llama_swap(dir / "y.yaml").errors.empty());
}

TEST_CASE("import llama-swap: cmd words split like a shell, comments dropped") {
  CHECK(config::split_command("a 'b c' \"d \\\"e\\\"\" f\\ g \\\n h\n# x y\ni") ==
        std::vector<std::string>{"a", "b c", "d \"e\"", "f g", "h", "i"});
}
