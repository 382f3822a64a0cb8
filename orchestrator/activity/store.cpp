// SQLite behind the Store: prepared statements, NULL for unknown figures, WAL with
// synchronous=NORMAL (a killed process loses no committed row and never corrupts the file).
#include "activity/store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <string>

namespace kevlaya::activity {
namespace {

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS requests(
  id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, client TEXT, user_agent TEXT, session TEXT,
  api TEXT, model TEXT, child TEXT, endpoint TEXT, status INTEGER, error TEXT,
  bytes_in INTEGER, bytes_out INTEGER, queue_ms INTEGER, swap_ms INTEGER, ttft_ms INTEGER,
  total_ms INTEGER, prompt_tokens INTEGER, cached_tokens INTEGER, generated_tokens INTEGER,
  prefill_tps REAL, decode_tps REAL, run TEXT, stage TEXT, capture TEXT);
CREATE INDEX IF NOT EXISTS requests_at ON requests(at_ms);
CREATE INDEX IF NOT EXISTS requests_model ON requests(model, id);
)";
constexpr const char* kColumns =
    "id,at_ms,client,user_agent,session,api,model,child,endpoint,status,error,bytes_in,bytes_out,queue_ms,"
    "swap_ms,ttft_ms,total_ms,prompt_tokens,cached_tokens,generated_tokens,prefill_tps,decode_tps,run,stage,capture";
constexpr int kBusyMs = 2000;  // a second reader (sqlite3 CLI) holding a lock

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) { rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }
  void text(int i, const std::string& v) {
    if (v.empty()) sqlite3_bind_null(s_, i);
    else sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void num(int i, std::int64_t v) {
    if (v < 0) sqlite3_bind_null(s_, i);
    else sqlite3_bind_int64(s_, i, v);
  }
  void real(int i, double v) {
    if (v < 0) sqlite3_bind_null(s_, i);
    else sqlite3_bind_double(s_, i, v);
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

Error db_error(sqlite3* db, const std::string& what) {
  return make_error(Errc::io_error, "activity history: " + what + ": " + sqlite3_errmsg(db));
}

std::int64_t col_int(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, i);
}
double col_real(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_double(s, i);
}
std::string col_text(sqlite3_stmt* s, int i) {
  const auto* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : std::string();
}

Record read_row(sqlite3_stmt* s) {
  Record r;
  int i = 0;
  r.id = col_int(s, i++), r.at_ms = col_int(s, i++);
  for (auto* f : {&r.client, &r.user_agent, &r.session, &r.api, &r.model, &r.child, &r.endpoint})
    *f = col_text(s, i++);
  r.status = static_cast<int>(col_int(s, i++));
  r.error = col_text(s, i++);
  for (auto* f : {&r.bytes_in, &r.bytes_out, &r.queue_ms, &r.swap_ms, &r.ttft_ms, &r.total_ms, &r.prompt_tokens,
                  &r.cached_tokens, &r.generated_tokens})
    *f = col_int(s, i++);
  r.prefill_tps = col_real(s, i++), r.decode_tps = col_real(s, i++);
  r.run = col_text(s, i++), r.stage = col_text(s, i++), r.capture = col_text(s, i++);
  return r;
}

void bind_row(Stmt& st, const Record& r) {
  int i = 1;
  st.num(i++, r.at_ms);
  for (const auto* f : {&r.client, &r.user_agent, &r.session, &r.api, &r.model, &r.child, &r.endpoint})
    st.text(i++, *f);
  st.num(i++, r.status);
  st.text(i++, r.error);
  for (const auto v : {r.bytes_in, r.bytes_out, r.queue_ms, r.swap_ms, r.ttft_ms, r.total_ms, r.prompt_tokens,
                       r.cached_tokens, r.generated_tokens})
    st.num(i++, v);
  st.real(i++, r.prefill_tps), st.real(i++, r.decode_tps);
  st.text(i++, r.run), st.text(i++, r.stage), st.text(i++, r.capture);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  std::unique_ptr<Store> s(new Store(db));  // closes `db` on every path below
  if (rc != SQLITE_OK) return db_error(db, "cannot open " + path.string());
  sqlite3_busy_timeout(db, kBusyMs);
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", kSchema})
    if (auto st = s->exec(sql); !st) return make_error(Errc::io_error, st.error().message + " (" + path.string() + ")");
  return s;
}

Store::~Store() { sqlite3_close(db_); }

Status Store::exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return db_error(db_, sql);
  return ok_status();
}

Status Store::append(const std::vector<Record>& batch, const Bounds& b, std::int64_t now_ms) {
  if (auto st = exec("BEGIN IMMEDIATE"); !st) return st;
  Stmt ins(db_, std::string("INSERT INTO requests(") + (kColumns + 3) +
                    ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  bool ok = ins.ok();
  for (std::size_t i = 0; ok && i < batch.size(); ++i) {
    bind_row(ins, batch[i]);
    ok = sqlite3_step(ins.get()) == SQLITE_DONE;
    sqlite3_reset(ins.get());
  }
  // The bounds: ids grow by one per row, so the newest max_records are the ids above max - max_records.
  Stmt by_count(db_, "DELETE FROM requests WHERE id <= (SELECT max(id) FROM requests) - ?");
  Stmt by_age(db_, "DELETE FROM requests WHERE at_ms < ?");
  if (ok) {
    sqlite3_bind_int64(by_count.get(), 1, b.max_records);
    ok = by_count.ok() && sqlite3_step(by_count.get()) == SQLITE_DONE;
  }
  if (ok && b.max_age_ms > 0) {
    sqlite3_bind_int64(by_age.get(), 1, now_ms - b.max_age_ms);
    ok = by_age.ok() && sqlite3_step(by_age.get()) == SQLITE_DONE;
  }
  if (ok) ok = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
  if (ok) return ok_status();
  Error e = db_error(db_, "cannot write " + std::to_string(batch.size()) + " record(s)");
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  return e;
}

Result<std::vector<Record>> Store::query(const Query& q) {
  std::string sql = std::string("SELECT ") + kColumns + " FROM requests WHERE 1";
  if (!q.model.empty()) sql += " AND model = ?1";
  if (!q.client.empty()) sql += " AND (client = ?2 OR session = ?2)";
  if (q.status) sql += " AND status = ?3";
  if (q.status_class == 1) sql += " AND status >= 400";
  else if (q.status_class > 1) sql += " AND status / 100 = ?4";
  if (q.since_ms > 0) sql += " AND at_ms >= ?5";
  if (q.until_ms > 0) sql += " AND at_ms <= ?6";
  if (q.before_id > 0) sql += " AND id < ?7";
  sql += " ORDER BY id DESC LIMIT ?8";
  Stmt st(db_, sql);
  if (!st.ok()) return db_error(db_, "cannot query");
  st.text(1, q.model), st.text(2, q.client);
  sqlite3_bind_int(st.get(), 3, q.status.value_or(0));
  sqlite3_bind_int(st.get(), 4, q.status_class);
  sqlite3_bind_int64(st.get(), 5, q.since_ms), sqlite3_bind_int64(st.get(), 6, q.until_ms);
  sqlite3_bind_int64(st.get(), 7, q.before_id);
  sqlite3_bind_int(st.get(), 8, std::clamp(q.limit, 1, kMaxPage));
  std::vector<Record> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) out.push_back(read_row(st.get()));
  if (rc != SQLITE_DONE) return db_error(db_, "cannot query");
  return out;
}

Result<std::int64_t> Store::count() {
  Stmt st(db_, "SELECT count(*) FROM requests");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return db_error(db_, "cannot count");
  return sqlite3_column_int64(st.get(), 0);
}

Result<std::string> Store::integrity_check() {
  Stmt st(db_, "PRAGMA integrity_check");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return db_error(db_, "cannot check");
  return col_text(st.get(), 0);
}

}  // namespace kevlaya::activity
