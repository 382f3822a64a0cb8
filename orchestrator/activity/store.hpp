// The request history on disk: one SQLite file (WAL), bounded by count and age. Blocking calls:
// only the Recorder's writer thread uses a Store (the request path never waits for the disk).
#pragma once
#include <filesystem>
#include <memory>
#include <vector>

#include "activity/record.hpp"
#include "common/error.hpp"

struct sqlite3;

namespace kevlaya::activity {

struct Bounds {
  std::int64_t max_records = 100000;  // oldest rows beyond this are deleted
  std::int64_t max_age_ms = 30LL * 86'400'000;  // rows older than this are deleted (0 = no limit)
};

class Store {
 public:
  // Opens (creating) the file and its table; io_error naming the path when it cannot.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Appends `batch` in one transaction, then deletes what the bounds exclude; all or nothing.
  Status append(const std::vector<Record>& batch, const Bounds& b, std::int64_t now_ms);
  // The records `q` selects, newest first (at most q.limit, capped at kMaxPage).
  Result<std::vector<Record>> query(const Query& q);
  Result<std::int64_t> count();
  Result<std::string> integrity_check();  // "ok", or SQLite's first complaint

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const char* sql);
  sqlite3* db_;
};

}  // namespace kevlaya::activity
