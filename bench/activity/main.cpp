// The request history's cost on the request path and its bound (docs/benchmarks.md, "Request
// history"): the time one Recorder::submit takes (what the door adds per call: a copy of the record
// handed to the writer thread), and the file after 1,000,000 records with max_records 100,000.
//   kevlaya_bench_activity [RECORDS]   (default 1000000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "activity/recorder.hpp"
#include "../stats.hpp"

using namespace kevlaya;

int main(int argc, char** argv) {
  const long total = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  const auto dir = std::filesystem::temp_directory_path() / ("kevlaya-bench-activity-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  activity::RecorderOptions o;
  o.path = dir / "activity.db";
  o.bounds.max_records = 100'000;
  o.max_queued = 10'000;
  std::vector<double> submit_ms;
  submit_ms.reserve(static_cast<std::size_t>(total));
  {
    activity::Recorder rec(o);
    activity::Record r;
    r.client = "127.0.0.1", r.user_agent = "openai-python/1.40", r.api = "openai", r.model = "kev", r.child = "kev";
    r.endpoint = "/v1/chat/completions", r.status = 200, r.queue_ms = 1, r.swap_ms = 0, r.ttft_ms = 30;
    r.total_ms = 120, r.prompt_tokens = 300, r.generated_tokens = 64, r.decode_tps = 85.5, r.prefill_tps = 900;
    for (long i = 0; i < total; ++i) {
      r.at_ms = activity::unix_ms();
      const auto t0 = std::chrono::steady_clock::now();
      rec.submit(r);
      submit_ms.push_back(bench::ms(std::chrono::steady_clock::now() - t0));
      // A door answers a few thousand calls a second at most: pace the producer so the writer keeps up.
      if (i % 1000 == 999)
        while (rec.stats().queued > 5000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto s = rec.stats();
    std::printf("records %ld, written %llu, dropped %llu\n", total, static_cast<unsigned long long>(s.written),
                static_cast<unsigned long long>(s.dropped));
  }
  std::sort(submit_ms.begin(), submit_ms.end());
  const auto pct = [&](double p) { return submit_ms[static_cast<std::size_t>(p * static_cast<double>(submit_ms.size() - 1))]; };
  std::printf("submit: median %.4f ms, p99 %.4f ms, max %.3f ms\n", pct(0.5), pct(0.99), submit_ms.back());
  auto store = activity::Store::open(o.path);
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) bytes += e.file_size();
  std::printf("kept %lld records (max_records 100000), files %.1f MiB\n",
              static_cast<long long>(store ? store.value()->count().value() : -1), static_cast<double>(bytes) / (1 << 20));
  std::filesystem::remove_all(dir);
  return 0;
}
