// The request history on disk: one SQLite file (WAL), bounded by count, age and bytes; each text
// field clipped to kMaxFieldBytes. Blocking calls: only the Recorder's writer thread uses a Store
// (the request path never waits for the disk).
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "activity/record.hpp"
#include "common/error.hpp"

struct sqlite3;

namespace kevlaya::activity {
namespace store_sql {
class Stmt;
}

struct Bounds {
  std::int64_t max_records = 100000;  // oldest rows beyond this are deleted
  std::int64_t max_age_ms = 30LL * 86'400'000;  // rows older than this are deleted (0 = no limit)
  std::int64_t max_bytes = 64LL << 20;  // the oldest rows are deleted while the rows take more
};

class Store {
 public:
  // Opens (creating) the file and its table; io_error naming the path when it cannot. A file that
  // is not a sound history of this schema (garbage, corrupt, an older table) is renamed
  // PATH.damaged-<unix ms> and a new one made; repaired() then says so.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Appends `batch` in one transaction, then deletes what the bounds exclude (the age and byte
  // bounds only when `tidy`: the count bound always holds); all or nothing.
  Status append(const std::vector<Record>& batch, const Bounds& b, std::int64_t now_ms, bool tidy = true);
  // The records `q` selects, newest first (at most q.limit, capped at kMaxPage).
  Result<std::vector<Record>> query(const Query& q);
  Result<std::int64_t> count();
  Result<std::string> integrity_check();  // "ok", or SQLite's first complaint
  const std::string& repaired() const { return repaired_; }  // what open() moved aside, and why ("" = nothing)
  bool damaged() const { return damaged_; }  // the last failure was SQLite finding the file corrupt

 private:
  explicit Store(sqlite3* db);
  store_sql::Stmt& prepared(const char* sql);  // `sql` a string that outlives the Store; reset, unbound
  std::int64_t pragma_value(const char* sql);   // a PRAGMA's one number, or -1
  std::int64_t used_bytes();                    // bytes of the pages in use, or -1
  Error fail(const std::string& what, int rc, const std::string& why);  // notes damage (rc)
  Status prune_bytes(std::int64_t max_bytes, const std::string& what);
  void give_back_free_pages(std::int64_t max_bytes);
  sqlite3* db_;
  std::string repaired_;
  bool damaged_ = false;
  std::map<const char*, std::unique_ptr<store_sql::Stmt>> prepared_;  // by the SQL's address
};

}  // namespace kevlaya::activity
