// Protected children through the door (issue 33, evict: protect): `kevlaya-orch serve` with two
// rotating stand-in models, kev protected. A stray laya request does not evict kev while kev is in
// use; it is served once kev has been idle for evict.idle_s, or at evict.max_wait_s at the latest,
// and the switch record says which; a laya request that cannot wait that long gets a 503 with
// Retry-After at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "door_fixture.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

void write_protect_config(const TempDir& dir, const std::string& evict, const std::string& top = "") {
  const auto common = "binary: " + standin_binary().string() + "\nmodel: " + tiny_llama().string() +
                      "\nngl: 0\nctx: 256\nparallel: 1\nshared_base: false\nextra_args: [--fake-token-ms, '20']\n";
  write_text(dir / "profiles/kev.yaml", "name: kev\n" + common + evict);
  write_text(dir / "profiles/laya.yaml", "name: laya\n" + common);
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\nscheduling:\n  max_wait_before_swap_ms: 300\n"
                                   "  min_residency_ms: 0\n" + top);
}

std::string evict_chat(const std::string& model) {
  return json{{"model", model}, {"max_tokens", 10}, {"messages", {{{"role", "user"}, {"content", "Once"}}}}}.dump();
}

// kev answered back to back for `busy`, a laya request sent 0.5 s in; returns when laya was
// answered (from the start), when kev's calls ended, and laya's reply.
struct Stray {
  Clock::duration laya_done{}, kev_done{};
  HttpReply laya;
};

Stray stray_during_use(std::uint16_t port, Clock::duration busy) {
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", evict_chat("kev")).status == 200);  // kev resident
  Stray out;
  const auto t0 = Clock::now();
  std::thread kev([&] {
    while (Clock::now() - t0 < busy) REQUIRE(http_request(port, "POST", "/v1/chat/completions", evict_chat("kev")).status == 200);
    out.kev_done = Clock::now() - t0;
  });
  std::this_thread::sleep_for(500ms);
  out.laya = http_request(port, "POST", "/v1/chat/completions", evict_chat("laya"));
  out.laya_done = Clock::now() - t0;
  kev.join();
  return out;
}

// Why kev made room for laya (its switch record: kev's calls may bring it back afterwards).
std::string eviction_reason(std::uint16_t port) {
  const auto sw = http_request(port, "GET", "/status").json_body().value("recent_switches", json::array());
  INFO(sw.dump());
  for (const auto& s : sw)
    if (s.value("from", "") == "kev" && s.value("to", "") == "laya") return s.value("reason", "");
  FAIL("no switch from kev to laya");
  return {};
}

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

TEST_CASE("eviction e2e: a protected child in use is not evicted by a stray request, and goes once idle", "[http][e2e]") {
  TempDir dir("evict-idle");
  write_protect_config(dir, "evict: {policy: protect, idle_s: 1, max_wait_s: 60}\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto s = stray_during_use(static_cast<std::uint16_t>(serve.port()), 3s);
  INFO("laya answered at " << secs(s.laya_done) << " s, kev's calls ended at " << secs(s.kev_done) << " s");
  CHECK(s.laya.status == 200);
  CHECK(s.laya_done > s.kev_done);          // not while kev was in use
  CHECK(s.laya_done < s.kev_done + 20s);    // but soon after its idle second
  CHECK(eviction_reason(static_cast<std::uint16_t>(serve.port())) == "protection: idle");
}

TEST_CASE("eviction e2e: a protected child's max_wait bounds the stray request's wait while it stays in use", "[http][e2e]") {
  TempDir dir("evict-bound");
  write_protect_config(dir, "evict: {policy: protect, idle_s: 600, max_wait_s: 2}\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto s = stray_during_use(static_cast<std::uint16_t>(serve.port()), 8s);
  INFO("laya answered at " << secs(s.laya_done) << " s, kev's calls ended at " << secs(s.kev_done) << " s");
  CHECK(s.laya.status == 200);
  CHECK(s.laya_done < s.kev_done);          // served while kev still had work
  CHECK(s.laya_done >= 2s);                 // 0.5 s in + at least most of the 2 s bound
  CHECK(eviction_reason(static_cast<std::uint16_t>(serve.port())) == "protection: max_wait");
}

TEST_CASE("eviction e2e: a request that cannot wait for a protected child gets 503 with Retry-After at once", "[http][e2e]") {
  TempDir dir("evict-refuse");
  write_protect_config(dir, "evict: {policy: protect, idle_s: 600, max_wait_s: 120}\n", "queue:\n  max_wait_s: 5\n");
  Serve serve(dir / "kevlaya.yaml");
  const auto port = static_cast<std::uint16_t>(serve.port());
  REQUIRE(http_request(port, "POST", "/v1/chat/completions", evict_chat("kev")).status == 200);
  const auto t0 = Clock::now();
  const auto r = http_request(port, "POST", "/v1/chat/completions", evict_chat("laya"));
  INFO(r.body);
  CHECK(r.status == 503);
  CHECK(Clock::now() - t0 < 4s);  // refused at once, not after its 5 s
  CHECK(std::stoi(r.header("retry-after").empty() ? "0" : r.header("retry-after")) >= 100);
  CHECK(r.body.find("evict: protect") != std::string::npos);
  const auto status = http_request(port, "GET", "/status").json_body();
  CHECK(status.value("recent_switches", json::array()).size() == 1);  // kev stayed
}
