// Prefetcher: pulls files (a model and its adapters) into the OS page cache in the background, in
// chunks, at idle I/O priority, while MemAvailable stays above a floor. It owns one long-lived
// worker thread (an asio::thread_pool of 1), so callers never block: prefetch() returns at once and a
// newer prefetch() or cancel() stops the running one after its current chunk.
#pragma once
#include <utility>  // before asio: boost 1.74 headers use std::exchange
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kevlaya::warm {

struct PrefetchOptions {
  std::int64_t min_available_mib = 1024;     // stop when MemAvailable would go under this
  std::uint64_t chunk_bytes = 16ULL << 20;   // one WILLNEED + read; cancellation granularity
  bool idle_io_priority = true;              // ioprio_set(IDLE) on the worker thread (best effort)
  // MemAvailable in MiB (injectable for tests); nullopt = unknown, no floor applied.
  std::function<std::optional<std::int64_t>()> mem_available;
};

enum class PrefetchEnd { done, memory_floor, cancelled, error };
const char* to_string(PrefetchEnd e);

struct PrefetchResult {
  std::vector<std::filesystem::path> files;
  std::uint64_t bytes_advised = 0;  // bytes read through (resident pages cost only a copy)
  PrefetchEnd end = PrefetchEnd::done;
  std::string message;              // why it ended early
  std::int64_t ms = 0;
};

class Prefetcher {
 public:
  using Done = std::function<void(const PrefetchResult&)>;
  explicit Prefetcher(PrefetchOptions opt = {});
  ~Prefetcher();  // cancels the running prefetch and joins the worker
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Supersedes any pending or running prefetch with `files`; returns at once. `done` is called on
  // the worker thread when this prefetch ends (done, floor, cancelled or error).
  void prefetch(std::vector<std::filesystem::path> files, Done done = {});
  // Stops the running prefetch after its current chunk (no-op when idle).
  void cancel();
  // Blocks until everything posted so far has ended (tests and benchmarks only).
  void wait_idle();

 private:
  PrefetchResult run(std::uint64_t gen, std::vector<std::filesystem::path> files);
  PrefetchEnd read_file(std::uint64_t gen, const std::filesystem::path& f, std::int64_t& budget,
                        PrefetchResult& res);
  std::optional<std::int64_t> available() const;

  PrefetchOptions opt_;
  std::atomic<std::uint64_t> gen_{0};  // bumped by prefetch()/cancel(): older work stops
  boost::asio::thread_pool pool_{1};
};

}  // namespace kevlaya::warm
