#include "activity/recorder.hpp"

#include <spdlog/spdlog.h>

namespace kevlaya::activity {
namespace {
constexpr auto kReopenEvery = std::chrono::seconds(10);  // a failed open is tried again this often
// After a record arrives the writer gathers for this long before writing: one transaction (its
// statements parsed once) and one wake-up for every record of the window, not per request (the
// writer's SQL and wake-ups were a fifth of the door's CPU per request under load).
constexpr auto kBatchWindow = std::chrono::milliseconds(50);
// The age and byte bounds are enforced at most this often (the count bound in every batch): their
// queries (the file's page counts, a delete by time whose bound value makes SQLite plan it anew)
// were a fifth of the writer's work per batch. A second of records is the most they are exceeded by.
constexpr auto kTidyEvery = std::chrono::seconds(1);
}  // namespace

Recorder::Recorder(RecorderOptions o) : opt_(std::move(o)) {
  stats_.path = opt_.path.string();
  thread_ = std::thread([this] { run(); });
}

Recorder::~Recorder() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Recorder::submit(const Record& r) {
  {
    std::lock_guard lk(mu_);
    if (queue_.size() >= opt_.max_queued) {  // the disk is slower than the door: history gives way
      ++stats_.dropped;
      if (stats_.error.empty()) {
        stats_.error = "activity history: " + std::to_string(opt_.max_queued) + " records wait for the disk; newer ones are dropped";
        spdlog::warn("{}", stats_.error);
      }
      return;
    }
    queue_.push_back(r);
    if (queue_.size() > 1) return;  // the writer is gathering or writing: nobody to wake
  }
  cv_.notify_one();
}

void Recorder::query(Query q, QueryDone done) {
  {
    std::lock_guard lk(mu_);
    queries_.emplace_back(std::move(q), std::move(done));
  }
  cv_.notify_one();
}

RecorderStats Recorder::stats() const {
  std::lock_guard lk(mu_);
  RecorderStats s = stats_;
  s.queued = queue_.size();
  return s;
}

void Recorder::set_error(std::string e) {
  std::lock_guard lk(mu_);
  if (e == stats_.error) return;
  if (e.empty()) spdlog::info("activity history: writing to {} again", stats_.path);
  else spdlog::warn("{}; requests are served but not recorded until it works again", e);
  stats_.error = std::move(e);
}

void Recorder::ensure_store() {
  const auto now = std::chrono::steady_clock::now();
  if (!store_ && (!tried_open_ || now - *tried_open_ >= kReopenEvery)) {
    tried_open_ = now;
    auto s = Store::open(opt_.path);
    if (!s) return set_error(s.error().message);
    store_ = std::move(s.value());
    if (const auto& r = store_->repaired(); !r.empty()) {
      spdlog::warn("activity history: {}", r);
      std::lock_guard lk(mu_);
      stats_.repaired = r;
    }
  }
}

void Recorder::write(std::vector<Record>& batch) {
  ensure_store();
  const auto now = std::chrono::steady_clock::now();
  const bool tidy = !tidied_ || now - *tidied_ >= kTidyEvery;
  Status st = store_ ? store_->append(batch, opt_.bounds, unix_ms(), tidy)
                     : Status(make_error(Errc::io_error, "activity history unavailable"));
  if (st && tidy) tidied_ = now;
  if (st) set_error("");
  else if (store_) set_error(st.error().message);
  if (!st && store_ && store_->damaged()) {  // corrupt under us: the next write reopens, moving it aside
    store_.reset();
    tried_open_.reset();
    tidied_.reset();
  }
  std::lock_guard lk(mu_);
  (st ? stats_.written : stats_.dropped) += batch.size();
}

// Each turn takes everything queued kBatchWindow after the first record (a kill -9 loses at most
// the records of that window and of the write in progress); a query or a stop ends the window at
// once, and a query sees every record submitted before it.
void Recorder::run() {
  ensure_store();  // at once: the door's files are open before its first call, not during it
  for (;;) {
    std::vector<Record> batch;
    std::deque<std::pair<Query, QueryDone>> queries;
    bool stopping = false;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return stop_ || !queue_.empty() || !queries_.empty(); });
      // Records submitted meanwhile wake nobody (submit notifies only an empty queue's first).
      cv_.wait_for(lk, kBatchWindow, [this] { return stop_ || !queries_.empty(); });
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      queries.swap(queries_);
      stopping = stop_;
    }
    if (!batch.empty() || (!store_ && !queries.empty())) write(batch);
    for (auto& [q, done] : queries) {
      if (!store_) {
        done(make_error(Errc::unavailable, stats().error.empty() ? "activity history unavailable" : stats().error));
        continue;
      }
      auto rows = store_->query(q);
      if (!rows) set_error(rows.error().message);  // /status shows what /activity answered
      done(std::move(rows));
    }
    if (stopping) return;
  }
}

}  // namespace kevlaya::activity
