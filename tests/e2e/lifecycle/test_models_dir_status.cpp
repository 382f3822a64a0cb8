// serve --models-dir over a folder of 2,000 models (docs/reliability.md): the door listens in
// seconds, and /status, which lists every model with its page-cache share, answers without
// measuring every file on each call. Each model is a hard link of one GGUF grown (sparse) to 1 GiB,
// so that a page-cache figure costs what a real model's does (a sampled mincore).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/http_client.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using namespace kevlaya::test;
namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("lifecycle e2e: 2,000 models of a folder are served within 20 s and each /status answers under 500 ms",
          "[lifecycle][e2e][models_dir]") {
  constexpr int kModels = 2000;
  TempDir dir("models-dir-status");
  fs::create_directories(dir / "models");
  REQUIRE(gguf::write_tiny_model(dir / "base.gguf", kevlaya::test::small_model_spec()).ok());
  fs::resize_file(dir / "base.gguf", 1ULL << 30);  // sparse: no disk, a 1 GiB mapping for mincore
  for (int i = 0; i < kModels; ++i) fs::create_hard_link(dir / "base.gguf", dir / ("models/m" + std::to_string(i) + ".gguf"));
  write_text(dir / "kevlaya.yaml", "models_dir: models\nmodels_binary: " + standin_binary().string() +
                                       "\nstate_dir: state\nlog_dir: logs\ngpu: {vram_mib: 24576}\n");
  const auto t0 = std::chrono::steady_clock::now();
  Serve serve(dir / "kevlaya.yaml");
  const double listen_ms = ms_since(t0);
  INFO(serve.proc().log().substr(0, 4000));
  CHECK(listen_ms < 20000);
  for (int call = 0; call < 3; ++call) {
    const auto t = std::chrono::steady_clock::now();
    const auto r = http_get(serve.port(), "/status", 30s);
    const double ms = ms_since(t);
    INFO("call " << call << ": " << ms << " ms");
    REQUIRE(r.status == 200);
    CHECK(r.json_body().at("profiles").size() == kModels);
    CHECK(ms < 500);
  }
}
