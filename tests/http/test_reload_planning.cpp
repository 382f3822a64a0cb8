// Planning never blocks the door (docs/ledger.md, "How many sets are searched"): `serve` with many
// profiles of `residency: auto` that share a GPU in many ways listens at once, and /health answers
// while POST /admin/reload plans 10 and then 16 of them (before: 12 s of planning on the door's
// only thread for 10, during which nothing answered).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "door_fixture.hpp"
#include "gguf/writer.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
using Clock = std::chrono::steady_clock;

namespace {

// `n` profiles, each with its own model file (no shared base), on the stand-in binary; the
// existing ones are kept. About six fit in 3000 MiB beside each other: many ways to combine them.
void write_profiles(const TempDir& dir, int n) {
  std::filesystem::create_directories(dir / "models");
  for (int i = 0; i < n; ++i) {
    const auto model = dir / ("models/m" + std::to_string(i) + ".gguf");
    if (!std::filesystem::exists(model)) REQUIRE(kevlaya::gguf::write_tiny_model(model, kevlaya::gguf::stories_shaped_spec()));
    write_text(dir / ("profiles/p" + std::to_string(i) + ".yaml"),
               "name: p" + std::to_string(i) + "\nbinary: " + standin_binary().string() + "\nmodel: " + model.string() +
                   "\nngl: 99\nctx: 256\n");
  }
}

struct ReloadTimes {
  int status = 0;
  std::string body;
  double reload_ms = 0, worst_health_ms = 0;
  int health_answers = 0;
};

// POST /admin/reload on a thread, GET /health in a loop until it returns.
ReloadTimes reload_while_probing(int port) {
  ReloadTimes t;
  std::atomic<bool> done{false};
  const auto t0 = Clock::now();
  std::thread reload([&] {
    const auto r = http_request(static_cast<std::uint16_t>(port), "POST", "/admin/reload");
    t.status = r.status;
    t.body = r.body;
    t.reload_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    done = true;
  });
  do {
    const auto h0 = Clock::now();
    const auto h = http_request(static_cast<std::uint16_t>(port), "GET", "/health");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - h0).count();
    if (h.status == 200) ++t.health_answers;
    t.worst_health_ms = std::max(t.worst_health_ms, ms);
  } while (!done);
  reload.join();
  return t;
}

}  // namespace

TEST_CASE("reload: /health answers while 10 and then 16 profiles of residency auto are planned", "[http][e2e]") {
  TempDir dir("reload-planning");
  write_profiles(dir, 2);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml",
             "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n"
             "residency: auto\ngpu:\n  vram_mib: 3000\n");
  Serve serve(dir / "kevlaya.yaml");
  for (const int n : {10, 16}) {
    INFO(n << " profiles");
    write_profiles(dir, n);
    const auto t = reload_while_probing(serve.port());
    INFO(t.body);
    REQUIRE(t.status == 200);
    CHECK(t.body.find("\"p" + std::to_string(n - 1) + "\"") != std::string::npos);  // the new profiles are in
    CHECK(t.health_answers >= 1);
    // Generous for a sanitizer build on a loaded machine; the Release figures are in docs/benchmarks.md.
    CHECK(t.worst_health_ms < 1000);
    CHECK(t.reload_ms < 5000);
  }
}
