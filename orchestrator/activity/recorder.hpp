// The request history's writer: records are handed over in O(1) (a bounded queue; past it they
// are dropped and counted) and written by one thread in batched transactions, so the request path
// never waits for the disk. A failing disk costs history, never a request: it is logged once per
// change and shown in /status "activity".
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "activity/record.hpp"
#include "activity/store.hpp"

namespace kevlaya::activity {

struct RecorderOptions {
  std::filesystem::path path;  // the SQLite file
  Bounds bounds;
  std::size_t max_queued = 10000;  // records waiting for the writer; past it, dropped
};

struct RecorderStats {
  std::string path;
  std::uint64_t written = 0, dropped = 0;
  std::size_t queued = 0;
  std::string error;     // the last failure, "" once writes succeed again
  std::string repaired;  // a damaged file found at open and moved aside ("" = none)
};

class Recorder {
 public:
  using QueryDone = std::function<void(Result<std::vector<Record>>)>;
  explicit Recorder(RecorderOptions o);  // starts the writer; opening the file is its first job
  ~Recorder();                           // writes what is queued, then joins
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void submit(const Record& r);  // a copy; never blocks on the disk; drops (counted) when the queue is full
  // Runs `q` on the writer thread (after the records queued before it); `done` is called there.
  // A failure is an io_error or unavailable error, also shown in stats().error.
  void query(Query q, QueryDone done);
  RecorderStats stats() const;

 private:
  void run();
  void ensure_store();  // opens the store unless open (or tried within kReopenEvery)
  void write(std::vector<Record>& batch);
  void set_error(std::string e);  // logs a change of state

  RecorderOptions opt_;
  // The one lock guards the hand-over to the writer thread (queue, stats); it is held for a push
  // or a swap, never across disk I/O.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Record> queue_;
  std::deque<std::pair<Query, QueryDone>> queries_;
  RecorderStats stats_;
  bool stop_ = false;
  std::unique_ptr<Store> store_;  // writer thread only (with tried_open_)
  std::optional<std::chrono::steady_clock::time_point> tried_open_;
  std::optional<std::chrono::steady_clock::time_point> tidied_;  // the bounds' last full check
  std::thread thread_;            // last: starts after everything above exists
};

}  // namespace kevlaya::activity
