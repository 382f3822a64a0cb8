// SQLite behind the Store: prepared statements, NULL for unknown figures, WAL with
// synchronous=NORMAL (a killed process loses no committed row and never corrupts the file), a
// check at open that moves a damaged or foreign file aside, and the byte budget.
#include "activity/store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <string>

namespace kevlaya::activity {
namespace store_sql {

// A prepared statement, finalized on scope exit. It keeps SQLite's message of its own failure
// (the connection's message is overwritten by the next statement, even a successful one).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
    if (rc_ != SQLITE_OK) why_ = sqlite3_errmsg(db);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  int rc() const { return rc_; }
  const std::string& why() const { return why_; }
  sqlite3_stmt* get() { return s_; }
  void rewind() {  // to run again, unbound
    if (s_) sqlite3_reset(s_), sqlite3_clear_bindings(s_);
  }
  // One step: SQLITE_ROW, SQLITE_DONE, or the failure (kept in rc() and why()).
  int step() {
    if (!s_) return rc_;
    const int rc = sqlite3_step(s_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) rc_ = sqlite3_extended_errcode(db_), why_ = sqlite3_errmsg(db_);
    return rc;
  }
  // A record's text, clipped to kMaxFieldBytes: what one record keeps is bounded whatever the
  // client sent. Bound in place (SQLITE_STATIC: the row outlives its step); only a clipped value
  // is a copy, SQLite's own.
  void text(int i, std::string_view v) {
    if (v.empty()) {
      sqlite3_bind_null(s_, i);
    } else if (v.size() <= kMaxFieldBytes) {
      sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    } else {
      const auto clipped = clip_field(v);
      sqlite3_bind_text(s_, i, clipped.data(), static_cast<int>(clipped.size()), SQLITE_TRANSIENT);
    }
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
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
  std::string why_;
};

}  // namespace store_sql

namespace {

using store_sql::Stmt;

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
// The setup of every connection: freed pages can be given back (new files only: SQLite fixes this
// at creation), and the WAL is cut back to 4 MiB after each checkpoint.
constexpr const char* kPragmas[] = {"PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL",
                                    "PRAGMA synchronous=NORMAL", "PRAGMA journal_size_limit=4194304"};

// SQLite's verdicts that the file is not a sound history (rather than one it cannot reach now).
bool is_damage(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
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

// Why the existing table cannot hold this build's records (a column missing), or "" (also when
// there is no table yet).
std::string schema_problem(sqlite3* db) {
  Stmt st(db, "PRAGMA table_info(requests)");
  std::string have = ",";
  while (st.step() == SQLITE_ROW) have += col_text(st.get(), 1) + ",";
  if (have == ",") return "";
  const std::string want = std::string(kColumns) + ",";
  for (std::size_t at = 0, end = 0; (end = want.find(',', at)) != std::string::npos; at = end + 1)
    if (const auto col = want.substr(at, end - at); have.find("," + col + ",") == std::string::npos)
      return "its table has no column '" + col + "' (an older or foreign schema)";
  return "";
}

struct Opening {
  sqlite3* db = nullptr;
  std::string why;       // when db is null
  bool damaged = false;  // the file is there but is not a sound history of this schema
};

// Opens, sets up and checks `path`; on failure closes it and says why.
Opening open_checked(const std::filesystem::path& path) {
  Opening o;
  const auto fail = [&o](std::string why, int rc) {
    o.why = std::move(why), o.damaged = is_damage(rc);
    sqlite3_close_v2(o.db);  // a zombie until a live statement is finalized
    o.db = nullptr;
    return o;
  };
  const int rc = sqlite3_open_v2(path.c_str(), &o.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) return fail("cannot open " + path.string() + ": " + sqlite3_errmsg(o.db), rc);
  sqlite3_busy_timeout(o.db, kBusyMs);
  // The schema first: an older file is moved aside as it was, not converted to WAL.
  if (auto why = schema_problem(o.db); !why.empty()) return fail(path.string() + ": " + why, SQLITE_CORRUPT);
  for (const char* sql : kPragmas)
    if (sqlite3_exec(o.db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
      return fail(path.string() + ": " + sql + ": " + sqlite3_errmsg(o.db), sqlite3_extended_errcode(o.db));
  if (sqlite3_exec(o.db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
    return fail(path.string() + ": " + sqlite3_errmsg(o.db), sqlite3_extended_errcode(o.db));
  Stmt check(o.db, "PRAGMA quick_check");
  if (check.step() != SQLITE_ROW) return fail(path.string() + ": quick_check: " + check.why(), check.rc());
  if (const auto v = col_text(check.get(), 0); v != "ok") return fail(path.string() + ": corrupt: " + v, SQLITE_CORRUPT);
  return o;
}

// Renames a damaged history (and its WAL and shared-memory files) to PATH.damaged-<unix ms>.
Result<std::string> move_aside(const std::filesystem::path& path) {
  const std::string to = path.string() + ".damaged-" + std::to_string(unix_ms());
  std::error_code ec;
  std::filesystem::rename(path, to, ec);
  if (ec) return make_error(Errc::io_error, "cannot move it aside: " + ec.message());
  for (const char* side : {"-wal", "-shm"}) std::filesystem::rename(path.string() + side, to + side, ec);  // may be absent
  return to;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto o = open_checked(path);
  std::string repaired;
  // Only a regular file is moved: a link to a device (/dev/full) or a folder stays an error.
  if (!o.db && o.damaged && std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) {
    auto aside = move_aside(path);
    if (!aside) return make_error(Errc::io_error, "activity history: " + o.why + "; " + aside.error().message);
    repaired = o.why + "; moved aside to " + *aside + " and a new history started";
    o = open_checked(path);
  }
  if (!o.db) return make_error(Errc::io_error, "activity history: " + o.why);
  std::unique_ptr<Store> s(new Store(o.db));
  s->repaired_ = std::move(repaired);
  return s;
}

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() {
  prepared_.clear();  // finalized before the connection closes
  sqlite3_close(db_);
}

// Parsing a batch's statements anew each time was a tenth of the history writer's CPU.
Stmt& Store::prepared(const char* sql) {
  auto& slot = prepared_[sql];
  if (slot && slot->ok()) slot->rewind();
  else slot = std::make_unique<Stmt>(db_, sql);  // new, or one that failed: prepared again
  return *slot;
}

std::int64_t Store::pragma_value(const char* sql) {
  Stmt& st = prepared(sql);
  const std::int64_t v = st.step() == SQLITE_ROW ? sqlite3_column_int64(st.get(), 0) : -1;
  sqlite3_reset(st.get());  // no read left open: it would hold back the WAL's checkpoints
  return v;
}

// Bytes of the pages in use (the file less its free pages), or -1.
std::int64_t Store::used_bytes() {
  const auto pages = pragma_value("PRAGMA page_count"), free = pragma_value("PRAGMA freelist_count"),
             size = pragma_value("PRAGMA page_size");
  return pages < 0 || free < 0 || size < 0 ? -1 : (pages - free) * size;
}

Error Store::fail(const std::string& what, int rc, const std::string& why) {
  damaged_ = is_damage(rc);
  return make_error(Errc::io_error, "activity history: " + what + ": " + why);
}

// Rows are about the same size (each text clipped): drop the oldest share that brings the pages in
// use to 90% of the budget, then measure again (an index page is freed only once it is empty).
// Freed pages are reused by the next rows, so the file stays near the budget.
Status Store::prune_bytes(std::int64_t max_bytes, const std::string& what) {
  for (int round = 0; round < 8; ++round) {
    const std::int64_t used = used_bytes();
    if (used < 0) return fail(what, sqlite3_extended_errcode(db_), "cannot measure the file");
    if (used <= max_bytes) return ok_status();
    Stmt n(db_, "SELECT count(*) FROM requests");
    if (n.step() != SQLITE_ROW) return fail(what, n.rc(), n.why());
    const std::int64_t rows = sqlite3_column_int64(n.get(), 0);
    if (rows <= 1) return ok_status();  // a budget below one record: the newest stays
    const double keep = 0.9 * static_cast<double>(max_bytes) / static_cast<double>(used);
    const auto drop = std::clamp<std::int64_t>(rows - static_cast<std::int64_t>(static_cast<double>(rows) * keep), 1, rows - 1);
    Stmt del(db_, "DELETE FROM requests WHERE id IN (SELECT id FROM requests ORDER BY id LIMIT ?)");
    if (del.ok()) sqlite3_bind_int64(del.get(), 1, drop);
    if (del.step() != SQLITE_DONE) return fail(what, del.rc(), del.why());
  }
  return ok_status();
}

// Much freed at once (a lowered budget, old rows aged out): the file shrinks (files made with
// auto_vacuum=INCREMENTAL, i.e. by this build; best effort: the rows are committed already).
void Store::give_back_free_pages(std::int64_t max_bytes) {
  const auto free = pragma_value("PRAGMA freelist_count"), size = pragma_value("PRAGMA page_size");
  if (free > 0 && size > 0 && free * size > std::max<std::int64_t>(max_bytes / 4, 1 << 20))
    sqlite3_exec(db_, "PRAGMA incremental_vacuum", nullptr, nullptr, nullptr);
}

Status Store::append(const std::vector<Record>& batch, const Bounds& b, std::int64_t now_ms, bool tidy) {
  static const std::string kInsert =
      std::string("INSERT INTO requests(") + (kColumns + 3) + ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  const std::string what = "cannot write " + std::to_string(batch.size()) + " record(s)";
  std::optional<Error> err;
  const auto run = [&](Stmt& st) {  // to its end; the first failure is kept, with its own message
    if (!err && st.step() != SQLITE_DONE) err = fail(what, st.rc(), st.why());
    sqlite3_reset(st.get());
  };
  run(prepared("BEGIN IMMEDIATE"));
  if (err) return *err;
  Stmt& ins = prepared(kInsert.c_str());
  for (std::size_t i = 0; !err && i < batch.size(); ++i) {
    if (ins.ok()) bind_row(ins, batch[i]);
    run(ins);
  }
  // The bounds: ids grow by one per row, so the newest max_records are the ids above max - max_records.
  if (!err) {
    Stmt& by_count = prepared("DELETE FROM requests WHERE id <= (SELECT max(id) FROM requests) - ?");
    if (by_count.ok()) sqlite3_bind_int64(by_count.get(), 1, b.max_records);
    run(by_count);
  }
  if (!err && tidy && b.max_age_ms > 0) {
    Stmt& by_age = prepared("DELETE FROM requests WHERE at_ms < ?");
    if (by_age.ok()) sqlite3_bind_int64(by_age.get(), 1, now_ms - b.max_age_ms);
    run(by_age);
  }
  if (!err && tidy && b.max_bytes > 0)
    if (auto st = prune_bytes(b.max_bytes, what); !st) err = st.error();
  if (!err) run(prepared("COMMIT"));
  if (err) {  // (a statement that failed is prepared afresh by its next use: prepared())
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return *err;
  }
  if (tidy) give_back_free_pages(b.max_bytes);
  return ok_status();
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
  if (!st.ok()) return fail("cannot query", st.rc(), st.why());
  st.text(1, q.model), st.text(2, q.client);
  sqlite3_bind_int(st.get(), 3, q.status.value_or(0));
  sqlite3_bind_int(st.get(), 4, q.status_class);
  sqlite3_bind_int64(st.get(), 5, q.since_ms), sqlite3_bind_int64(st.get(), 6, q.until_ms);
  sqlite3_bind_int64(st.get(), 7, q.before_id);
  sqlite3_bind_int(st.get(), 8, std::clamp(q.limit, 1, kMaxPage));
  std::vector<Record> out;
  int rc = SQLITE_ROW;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back(read_row(st.get()));
  if (rc != SQLITE_DONE) return fail("cannot query", st.rc(), st.why());
  return out;
}

Result<std::int64_t> Store::count() {
  Stmt st(db_, "SELECT count(*) FROM requests");
  if (st.step() != SQLITE_ROW) return fail("cannot count", st.rc(), st.why());
  return sqlite3_column_int64(st.get(), 0);
}

Result<std::string> Store::integrity_check() {
  Stmt st(db_, "PRAGMA integrity_check");
  if (st.step() != SQLITE_ROW) return fail("cannot check", st.rc(), st.why());
  return col_text(st.get(), 0);
}

}  // namespace kevlaya::activity
