// The request history against careless and hostile input: credential headers refused by the
// configuration, CSV cells that a spreadsheet would run, clients that choose the file's size,
// damaged or older files, times that overflow (docs/security.md, docs/reliability.md).
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <filesystem>

#include "activity/recorder.hpp"
#include "activity/store.hpp"
#include "config/config.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using activity::Record;
namespace fs = std::filesystem;

namespace {

Record rec(std::int64_t at_ms) {
  Record r;
  r.at_ms = at_ms;
  r.model = "kev";
  r.status = 200;
  r.api = "openai";
  r.endpoint = "/v1/chat/completions";
  r.client = "127.0.0.1";
  return r;
}

std::string history_diagnostics(const config::LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.format() + "\n";
  return s;
}

config::LoadResult history_load_with(const test::TempDir& d, const std::string& orch_yaml) {
  test::write_text(d / "models/kev.gguf", "x");
  test::write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../models/kev.gguf\n");
  test::write_text(d / "kevlaya.yaml", orch_yaml);
  return config::load(d / "kevlaya.yaml");
}

std::vector<fs::path> moved_aside(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (const auto n = e.path().filename().string(); n.rfind("a.db.damaged-", 0) == 0 && n.find("-wal") == std::string::npos &&
                                                   n.find("-shm") == std::string::npos)
      out.push_back(e.path());
  return out;
}

// A history that opens, takes a record and gives it back (the file is usable).
void check_usable(activity::Store& s) {
  REQUIRE(s.append({rec(1000)}, {}, 1000));
  auto rows = s.query({});
  REQUIRE(rows);
  CHECK(rows->size() == 1);
}

}  // namespace

TEST_CASE("session_headers refuses each credential header at its file:line:col", "[activity][config]") {
  for (const std::string name : {"Authorization", "X-Api-Key", "Cookie", "X-Goog-Api-Key"}) {
    test::TempDir d("activity-cfg-credential");
    const auto r = history_load_with(d, "listen: {port: 8181}\nactivity:\n  session_headers:\n    - X-Session-ID\n    - " + name + "\n");
    const auto text = history_diagnostics(r);
    INFO(text);
    CHECK_FALSE(r.ok());
    CHECK(text.find("kevlaya.yaml:5:7: error: activity.session_headers[1]: '" + name + "' carries credentials") !=
          std::string::npos);
  }
  test::TempDir d("activity-cfg-credential-scalar");
  const auto r = history_load_with(d, "activity: {session_headers: Proxy-Authorization}\n");
  INFO(history_diagnostics(r));
  CHECK(history_diagnostics(r).find("kevlaya.yaml:1:29: error: activity.session_headers: 'Proxy-Authorization' carries") !=
        std::string::npos);
}

TEST_CASE("activity.max_mib is read and bounded", "[activity][config]") {
  test::TempDir d("activity-cfg-mib");
  const auto r = history_load_with(d, "activity: {max_mib: 8}\n");
  INFO(history_diagnostics(r));
  REQUIRE(r.ok());
  CHECK(r.config.orch.activity.max_mib == 8);
  CHECK(config::ActivityCfg{}.max_mib == 64);
  CHECK_FALSE(history_load_with(d, "activity: {max_mib: 0}\n").ok());
}

TEST_CASE("CSV cells a spreadsheet would run as a formula are quoted text", "[activity]") {
  for (const std::string ua : {"=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"}) {
    Record r = rec(1);
    r.user_agent = ua;
    std::string quoted;
    for (const char c : ua) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    INFO(ua);
    CHECK(activity::csv_row(r).find(",\"'" + quoted + "\",") != std::string::npos);
  }
  Record plain = rec(1);
  plain.user_agent = "curl/8.0";
  plain.session = "a-b=c";  // a formula character inside a cell is harmless
  CHECK(activity::csv_row(plain).find(",curl/8.0,a-b=c,") != std::string::npos);
}

TEST_CASE("a time ago too large to compute is an error, not an empty page", "[activity]") {
  const std::int64_t now = 1'700'000'000'000;
  for (const char* t : {"99999999999999h", "999999999999999999d", "99999999999999999999", "100000d"}) {
    const auto r = activity::parse_time(t, now);
    INFO(t);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::bad_request);
    CHECK(r.error().message.find("out of range") != std::string::npos);
  }
  CHECK(activity::parse_time("19000d", now).value() == now - 19000LL * 86'400'000);
}

TEST_CASE("a record keeps at most kMaxFieldBytes of each text, marked as cut", "[activity]") {
  test::TempDir dir("activity-clip");
  auto s = activity::Store::open(dir / "a.db");
  REQUIRE(s);
  Record r = rec(1000);
  r.user_agent = std::string(1 << 20, 'u');
  r.session = std::string(300, 's') + "\xC3\xA9";  // the cut never splits a character
  r.endpoint = "/v1/" + std::string(100000, 'p');
  REQUIRE((*s)->append({r}, {}, 1000));
  const auto back = (*s)->query({}).value().at(0);
  for (const auto* f : {&back.user_agent, &back.session, &back.endpoint}) {
    CHECK(f->size() <= activity::kMaxFieldBytes);
    CHECK(f->substr(f->size() - 3) == "\xE2\x80\xA6");  // "…"
  }
  CHECK(back.user_agent.rfind("uuuu", 0) == 0);
  CHECK(activity::clip_field("short") == "short");
  CHECK(activity::clip_field(std::string(255, 'a') + "\xC3\xA9").size() <= activity::kMaxFieldBytes);
}

TEST_CASE("records with huge headers keep activity.db within its byte budget, newest kept", "[activity]") {
  test::TempDir dir("activity-budget");
  constexpr std::int64_t kBudget = 1 << 20;
  const std::string huge(64 << 10, 'h');
  std::int64_t at = 1000;
  {
    auto s = activity::Store::open(dir / "a.db");
    REQUIRE(s);
    for (int batch = 0; batch < 40; ++batch) {  // ~4 MiB of records even after each text is clipped
      std::vector<Record> rows;
      for (int i = 0; i < 100; ++i) {
        Record r = rec(++at);
        r.user_agent = huge, r.session = huge, r.endpoint = huge, r.child = huge, r.run = huge, r.stage = huge;
        rows.push_back(std::move(r));
      }
      REQUIRE((*s)->append(rows, {1'000'000, 0, kBudget}, at));
    }
    const auto n = (*s)->count().value();
    CHECK(n > 100);
    CHECK(n < 4000);
    CHECK((*s)->query({}).value().at(0).at_ms == at);  // the newest survive
  }
  std::error_code ec;
  const auto wal = fs::file_size(dir / "a.db-wal", ec);
  CHECK(fs::file_size(dir / "a.db") + (ec ? 0 : wal) <= kBudget * 3 / 2);
}

TEST_CASE("garbage bytes as activity.db are moved aside and a new history starts", "[activity]") {
  test::TempDir dir("activity-garbage");
  const std::string junk(8192, '\x5a');
  test::write_text(dir / "a.db", junk);
  auto s = activity::Store::open(dir / "a.db");
  REQUIRE(s);
  CHECK((*s)->repaired().find("moved aside") != std::string::npos);
  check_usable(**s);
  const auto aside = moved_aside(dir.path());
  REQUIRE(aside.size() == 1);
  CHECK(test::read_text(aside[0]) == junk);  // kept for the operator, untouched
}

TEST_CASE("an older activity.db (a column missing) is moved aside and a new history starts", "[activity]") {
  test::TempDir dir("activity-old-schema");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir / "a.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE requests(id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, client TEXT);"
                           "INSERT INTO requests(at_ms, client) VALUES(1, 'old')", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto s = activity::Store::open(dir / "a.db");
  REQUIRE(s);
  INFO((*s)->repaired());
  CHECK((*s)->repaired().find("no column 'user_agent'") != std::string::npos);
  check_usable(**s);
  CHECK(moved_aside(dir.path()).size() == 1);
}

TEST_CASE("the recorder reports a repaired file and writes on", "[activity]") {
  test::TempDir dir("activity-recorder-repair");
  test::write_text(dir / "a.db", std::string(4096, '\x01'));
  activity::Recorder r({dir / "a.db", {}, 100});
  for (int i = 0; i < 5; ++i) r.submit(rec(activity::unix_ms()));
  test::eventually([&] { return r.stats().written + r.stats().dropped >= 5; });
  const auto st = r.stats();
  CHECK(st.written == 5);
  CHECK(st.error.empty());
  CHECK(st.repaired.find("moved aside") != std::string::npos);
}

TEST_CASE("a write failure names SQLite's own reason, not 'not an error'", "[activity]") {
  test::TempDir dir("activity-write-reason");
  auto s = activity::Store::open(dir / "a.db");
  REQUIRE(s);
  sqlite3* db = nullptr;  // another program changes the table under the open history
  REQUIRE(sqlite3_open((dir / "a.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE requests; CREATE TABLE requests(id INTEGER PRIMARY KEY, at_ms INTEGER)", nullptr,
                       nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const auto st = (*s)->append({rec(1)}, {}, 1);
  REQUIRE_FALSE(st);
  INFO(st.error().message);
  CHECK(st.error().message.find("not an error") == std::string::npos);
  CHECK(st.error().message.find("no column") != std::string::npos);
}

TEST_CASE("a history write after a failed one prepares its statements afresh and writes", "[activity]") {
  test::TempDir dir("activity-write-again");
  auto s = activity::Store::open(dir / "a.db");
  REQUIRE(s);
  REQUIRE((*s)->append({rec(1)}, {}, 1));  // its statements prepared and kept
  sqlite3* db = nullptr;  // another program swaps the table under the open history, then puts it back
  REQUIRE(sqlite3_open((dir / "a.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "ALTER TABLE requests RENAME TO kept; CREATE TABLE requests(id INTEGER PRIMARY KEY, at_ms INTEGER)",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  CHECK_FALSE((*s)->append({rec(2)}, {}, 2));
  REQUIRE(sqlite3_exec(db, "DROP TABLE requests; ALTER TABLE kept RENAME TO requests", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  for (std::int64_t i = 3; i < 6; ++i) REQUIRE((*s)->append({rec(i)}, {}, i));  // kept ones reused, then again
  CHECK((*s)->count().value() == 4);
}
