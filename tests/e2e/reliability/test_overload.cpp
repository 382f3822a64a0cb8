// Overload: 10x queue.max_depth concurrent clients hammer two models (so the door also switches)
// through a real `kevlaya-orch serve`: every request ends with 200, 429 (queue full) or 504
// (no slot within max_wait_s) — none hangs, none is dropped — and the orchestrator's memory,
// fds and threads stay bounded. ~5 s in CI; KEVLAYA_RELIABILITY_LONG=1 runs it for 60 s.
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "harness.hpp"

using namespace kevlaya::test;

namespace {

constexpr int kDepth = 4;
constexpr int kClients = 10 * kDepth;
constexpr int kMaxWaitS = 2;

std::chrono::seconds duration() {
  const char* v = std::getenv("KEVLAYA_RELIABILITY_LONG");
  return v && std::string(v) == "1" ? std::chrono::seconds(60) : std::chrono::seconds(5);
}

struct Tally {
  std::mutex mu;
  std::map<int, int> by_status;
  std::vector<std::string> bad;  // unexpected replies, for the report
  void add(const HttpReply& r) {
    std::lock_guard lock(mu);
    ++by_status[r.status];
    const bool ok = r.status == 200 || ((r.status == 429 || r.status == 504) && is_openai_error(r.body));
    if ((!ok || r.timed_out) && bad.size() < 5)
      bad.push_back(std::to_string(r.status) + (r.timed_out ? " (timed out) " : " ") + r.body);
  }
};

}  // namespace

TEST_CASE("overload: 10x queue depth of clients get 200, 429 or 504, memory bounded",
          "[reliability][overload]") {
  TempDir dir("overload");
  const auto config = write_config(
      dir, {{"kev", {"--fake-token-ms", "20"}, ""}, {"laya", {"--fake-token-ms", "20"}, ""}},
      "queue: {max_depth: " + std::to_string(kDepth) + ", max_wait_s: " + std::to_string(kMaxWaitS) + "}\n");

  // Sanitizer builds: a small quarantine, so RSS measures live memory rather than ASan's cache.
  const char* asan = std::getenv("ASAN_OPTIONS");
  Serve serve(config, {{"ASAN_OPTIONS", std::string(asan ? asan : "") + ":quarantine_size_mb=8"}});
  const int port = serve.port();
  const pid_t orch = serve.proc().pid();
  REQUIRE(chat(port, "kev").status == 200);
  const long rss_start = rss_kib(orch);
  const int fds_start = fd_count(orch);
  const int threads_start = thread_count(orch);

  Tally tally;
  std::atomic<bool> stop{false};
  std::atomic<long> rss_peak{rss_start};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      // Bounded client wait: the door must answer within max_wait_s plus one generation.
      for (int n = 0; !stop; ++n) {
        auto r = chat(port, (i + n) % 3 == 0 ? "laya" : "kev", i % 2 == 0, std::chrono::seconds(kMaxWaitS + 20));
        tally.add(r);
        if (r.status == 429) std::this_thread::sleep_for(50ms);  // a polite client backs off a little
      }
    });
  }
  const auto end = std::chrono::steady_clock::now() + duration();
  while (std::chrono::steady_clock::now() < end) {
    rss_peak = std::max(rss_peak.load(), rss_kib(orch));
    std::this_thread::sleep_for(100ms);  // sampling interval, not synchronisation
  }
  stop = true;
  for (auto& t : clients) t.join();

  int total = 0;
  for (const auto& [status, n] : tally.by_status) {
    WARN("status " << status << ": " << n);
    total += n;
  }
  for (const auto& b : tally.bad) WARN("unexpected: " << b);
  CHECK(tally.bad.empty());
  CHECK(tally.by_status[200] > 0);
  CHECK(tally.by_status[429] > 0);  // the queue really was full
  CHECK(total == tally.by_status[200] + tally.by_status[429] + tally.by_status[504]);
  WARN("rss " << rss_start << " KiB -> peak " << rss_peak << " KiB; fds " << fds_start << " -> "
              << fd_count(orch) << "; threads " << threads_start << " -> " << thread_count(orch));
  CHECK(rss_peak < rss_start + 128 * 1024);  // KiB: bounded whatever the number of requests
  CHECK(eventually([&] { return fd_count(orch) <= fds_start + 2; }, 5s));
  CHECK(thread_count(orch) <= threads_start + 2);
  CHECK(chat(port, "kev").status == 200);  // still serving after the storm
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
