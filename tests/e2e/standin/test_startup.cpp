// Start-up contract of the stand-in: flags, binding, loading (503 -> 200), log lines, load faults.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;
using nlohmann::json;

namespace {

int run(const std::string& args) {
  return run_command(standin_binary().string() + " " + args).exit_code;
}

}  // namespace

TEST_CASE("unknown flag exits 1 with the real error line", "[standin]") {
  const auto r = run_command(standin_binary().string() + " -m " + model_path() + " --foo_bar");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("error: invalid argument: --foo-bar") != std::string::npos);
}

TEST_CASE("bad flag value exits 1 with the usage of that flag", "[standin]") {
  const auto r = run_command(standin_binary().string() + " -c abc");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("error while handling argument \"-c\": stoi") != std::string::npos);
  CHECK(run("-np 0") == 1);
  CHECK(run("-ctk q9_9") == 1);
  CHECK(run("--lora-scaled nocolon") == 1);
}

TEST_CASE("fake-exit-before-listen exits with the given code", "[standin]") {
  CHECK(run("-m " + model_path() + " --fake-exit-before-listen 7") == 7);
}

TEST_CASE("port 0 reports the real port and health turns 503 then 200", "[standin]") {
  TempDir dir("standin-port0");
  StandinProcess p({"-m", model_path(), "--port", "0", "--fake-load-ms", "1500"}, dir / "log");
  REQUIRE(p.wait_for_log("loading model"));
  // The socket is bound before loading, but the listening line comes after "model loaded".
  CHECK(p.log().find("listening on") == std::string::npos);
  const std::string loading = p.log();
  CHECK(loading.find("model loaded") == std::string::npos);
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  CHECK(p.log().find("I srv  llama_server: model loaded") != std::string::npos);
  const auto ok = http_request(port, "GET", "/health");
  CHECK(ok.status == 200);
  CHECK(json::parse(ok.body) == json{{"status", "ok"}});
}

TEST_CASE("health answers 503 Loading model while loading", "[standin]") {
  TempDir dir("standin-503");
  // Fixed port so the test can reach it before the listening line: take one from a port-0 run.
  int port = 0;
  {
    StandinProcess probe({"-m", model_path(), "--port", "0", "--fake-load-ms", "5"}, dir / "probe");
    port = probe.wait_ready();
  }
  REQUIRE(port > 0);
  StandinProcess p({"-m", model_path(), "--port", std::to_string(port), "--fake-load-ms", "3000"}, dir / "log");
  REQUIRE(p.wait_for_log("loading model"));
  const auto r = http_request(port, "GET", "/health");
  CHECK(r.status == 503);
  CHECK(json::parse(r.body) ==
        json{{"error", {{"code", 503}, {"message", "Loading model"}, {"type", "unavailable_error"}}}});
  CHECK(http_request(port, "GET", "/v1/models").status == 503);
  REQUIRE(p.wait_ready() == port);
  CHECK(http_request(port, "GET", "/health").status == 200);
}

TEST_CASE("memory lines follow llama.cpp at -lv 4 and are hidden at the default verbosity", "[standin]") {
  TempDir dir("standin-lines");
  StandinProcess p({"-m", model_path(), "--port", "0", "-lv", "4", "-c", "2048", "-ngl", "99"}, dir / "log");
  REQUIRE(p.wait_ready() > 0);
  const std::string log = p.log();
  // stories-shaped model: 5 layers x 2048 cells x (32 + 32) x 2 bytes x (K + V) = 1.25 MiB, as the real server prints.
  CHECK(log.find("I llama_kv_cache:      CUDA0 KV buffer size =     1.25 MiB") != std::string::npos);
  CHECK(log.find("I load_tensors: offloaded 6/6 layers to GPU") != std::string::npos);
  CHECK(log.find("I load_tensors:        CUDA0 model buffer size =") != std::string::npos);
  CHECK(log.find("I sched_reserve:      CUDA0 compute buffer size =") != std::string::npos);

  StandinProcess quiet({"-m", model_path(), "--port", "0", "-ngl", "0", "-ctk", "q8_0"}, dir / "quiet");
  REQUIRE(quiet.wait_ready() > 0);
  CHECK(quiet.log().find("load_tensors") == std::string::npos);

  StandinProcess cpu({"-m", model_path(), "--port", "0", "-ngl", "0", "-lv", "4"}, dir / "cpu");
  REQUIRE(cpu.wait_ready() > 0);
  CHECK(cpu.log().find("I load_tensors: offloaded 0/6 layers to GPU") != std::string::npos);
  CHECK(cpu.log().find("CUDA0") == std::string::npos);
  CHECK(cpu.log().find("I llama_kv_cache:        CPU KV buffer size =     1.25 MiB") != std::string::npos);
}

TEST_CASE("missing and corrupt models fail with the llama_model_load chain and exit 1", "[standin]") {
  TempDir dir("standin-badmodel");
  StandinProcess missing({"-m", (dir / "nope.gguf").string(), "--port", "0"}, dir / "missing");
  CHECK(missing.wait_exit() == 1);
  CHECK(missing.log().find("E llama_model_load: error loading model: llama_model_loader: failed to load model from") !=
        std::string::npos);
  CHECK(missing.log().find("E srv  llama_server: exiting due to model loading error") != std::string::npos);

  write_text(dir / "bad.gguf", "GGUF\x03\x00\x00\x00garbage");
  StandinProcess corrupt({"-m", (dir / "bad.gguf").string(), "--port", "0"}, dir / "corrupt");
  CHECK(corrupt.wait_exit() == 1);
  CHECK(corrupt.log().find("E llama_model_load: error loading model:") != std::string::npos);
}

TEST_CASE("fake-cuda-oom prints the CUDA allocation failure and exits 1", "[standin]") {
  TempDir dir("standin-oom");
  StandinProcess p({"-m", model_path(), "--port", "0", "--fake-cuda-oom"}, dir / "log");
  CHECK(p.wait_exit() == 1);
  const std::string log = p.log();
  CHECK(log.find("E ggml_backend_cuda_buffer_type_alloc_buffer: allocating ") != std::string::npos);
  CHECK(log.find(" MiB on device 0: cudaMalloc failed: out of memory") != std::string::npos);
  CHECK(log.find("E alloc_tensor_range: failed to allocate CUDA0 buffer of size ") != std::string::npos);
  CHECK(log.find("E llama_model_load: error loading model: unable to allocate CUDA0 buffer") != std::string::npos);
  CHECK(log.find("exiting due to model loading error") != std::string::npos);
}

TEST_CASE("fake-kv-fail prints the KV cache allocation failure and exits 1", "[standin]") {
  TempDir dir("standin-kv");
  StandinProcess p({"-m", model_path(), "--port", "0", "--fake-kv-fail"}, dir / "log");
  CHECK(p.wait_exit() == 1);
  CHECK(p.log().find("failed to initialize the context: failed to allocate buffer for kv cache") != std::string::npos);
  CHECK(p.log().find("E srv    load_model: failed to create_context with model") != std::string::npos);
}

TEST_CASE("bind failures print the real line and exit 1", "[standin]") {
  TempDir dir("standin-bind");
  StandinProcess fake({"-m", model_path(), "--port", "0", "--fake-bind-fail"}, dir / "fake");
  CHECK(fake.wait_exit() == 1);
  CHECK(fake.log().find("E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 0") !=
        std::string::npos);
  CHECK(fake.log().find("exiting due to HTTP server error") != std::string::npos);

  StandinProcess first({"-m", model_path(), "--port", "0"}, dir / "first");
  const int port = first.wait_ready();
  REQUIRE(port > 0);
  StandinProcess second({"-m", model_path(), "--port", std::to_string(port)}, dir / "second");
  CHECK(second.wait_exit() == 1);
  CHECK(second.log().find("couldn't bind HTTP server socket") != std::string::npos);
}

TEST_CASE("fake-rss-mib really grows the resident set", "[standin]") {
  TempDir dir("standin-rss");
  StandinProcess p({"-m", model_path(), "--port", "0", "--fake-rss-mib", "64"}, dir / "log");
  REQUIRE(p.wait_ready() > 0);
  const std::string status = read_text("/proc/" + std::to_string(p.pid()) + "/status");
  const auto pos = status.find("VmRSS:");
  REQUIRE(pos != std::string::npos);
  CHECK(std::stol(status.substr(pos + 6)) >= 64 * 1024);  // kB
}
