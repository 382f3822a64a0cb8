// The request history's file and writer: bounds, restarts, filters, a failing disk.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>

#include "activity/recorder.hpp"
#include "activity/store.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using activity::Record;

namespace {

Record rec(const std::string& model, int status, std::int64_t at_ms) {
  Record r;
  r.at_ms = at_ms;
  r.model = model;
  r.status = status;
  r.api = "openai";
  r.endpoint = "/v1/chat/completions";
  r.client = "127.0.0.1";
  r.decode_tps = 42.5;
  r.generated_tokens = 7;
  return r;
}

std::unique_ptr<activity::Store> open_store(const std::filesystem::path& p) {
  auto s = activity::Store::open(p);
  REQUIRE(s);
  return std::move(s.value());
}

// Waits (bounded) until the recorder has handled `n` records; true when it wrote them all.
bool written(const activity::Recorder& r, std::uint64_t n) {
  test::eventually([&] { return r.stats().written + r.stats().dropped >= n; });
  return r.stats().written >= n;
}

}  // namespace

TEST_CASE("a stored record reads back field for field, unknown figures as unknown", "[activity]") {
  test::TempDir dir("activity-fields");
  auto s = open_store(dir / "a.db");
  Record r = rec("kev", 200, 1000);
  r.session = "s-1", r.user_agent = "curl/8", r.child = "kev", r.error = "", r.bytes_in = 12, r.bytes_out = 34;
  r.queue_ms = 5, r.swap_ms = 0, r.ttft_ms = 9, r.total_ms = 20, r.prompt_tokens = 3, r.cached_tokens = 1;
  r.prefill_tps = 2000, r.run = "run-1", r.stage = "decide";
  REQUIRE(s->append({r, rec("laya", 500, 2000)}, {}, 3000));
  auto rows = s->query({});
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  const auto& back = (*rows)[1];  // newest first
  r.id = back.id;
  CHECK(activity::to_json(back) == activity::to_json(r));
  CHECK((*rows)[0].queue_ms == -1);
  CHECK(activity::to_json((*rows)[0])["queue_ms"].is_null());
}

TEST_CASE("the history keeps at most max_records, the newest", "[activity]") {
  test::TempDir dir("activity-count");
  auto s = open_store(dir / "a.db");
  activity::Bounds b;
  b.max_records = 10;
  std::vector<Record> batch;
  for (int i = 0; i < 25; ++i) batch.push_back(rec("kev", 200, 1000 + i));
  REQUIRE(s->append(batch, b, 2000));
  REQUIRE(s->append({rec("kev", 200, 1100)}, b, 2000));
  CHECK(s->count().value() == 10);
  auto rows = s->query({});
  REQUIRE(rows);
  CHECK(rows->front().at_ms == 1100);
  CHECK(rows->back().at_ms == 1016);
}

TEST_CASE("the history forgets records older than max_age", "[activity]") {
  test::TempDir dir("activity-age");
  auto s = open_store(dir / "a.db");
  activity::Bounds b;
  b.max_age_ms = 1000;
  REQUIRE(s->append({rec("kev", 200, 1000), rec("kev", 200, 5000)}, b, 5500));
  CHECK(s->count().value() == 1);
}

// The writer tidies (age and bytes) at most once a second; the count bound holds in every batch.
TEST_CASE("an append that does not tidy keeps the count bound and leaves the age bound to the next one", "[activity]") {
  test::TempDir dir("activity-tidy");
  auto s = open_store(dir / "a.db");
  activity::Bounds b;
  b.max_records = 3;
  b.max_age_ms = 1000;
  REQUIRE(s->append({rec("kev", 200, 1000), rec("kev", 200, 1100)}, b, 5000, /*tidy=*/false));
  CHECK(s->count().value() == 2);  // older than max_age, kept until a tidy batch
  REQUIRE(s->append({rec("kev", 200, 4800), rec("kev", 200, 4900)}, b, 5000, /*tidy=*/false));
  CHECK(s->count().value() == 3);  // the count bound; 1100 is still there, older than max_age
  REQUIRE(s->append({}, b, 5000));  // a tidy batch
  auto rows = s->query({});
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK(rows->back().at_ms == 4800);
}

TEST_CASE("the history survives a reopen (a restart)", "[activity]") {
  test::TempDir dir("activity-reopen");
  {
    auto s = open_store(dir / "a.db");
    REQUIRE(s->append({rec("kev", 200, 1000)}, {}, 1000));
  }
  auto s = open_store(dir / "a.db");
  REQUIRE(s->append({rec("laya", 200, 2000)}, {}, 2000));
  auto rows = s->query({});
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK(rows->back().model == "kev");
  CHECK(s->integrity_check().value() == "ok");
}

TEST_CASE("history filters: model, status class, client or session, time, pages", "[activity]") {
  test::TempDir dir("activity-filter");
  auto s = open_store(dir / "a.db");
  auto a = rec("kev", 200, 1000), b = rec("laya", 503, 2000), c = rec("kev", 429, 3000);
  c.session = "agent-7";
  REQUIRE(s->append({a, b, c}, {}, 3000));
  const auto ids = [&](activity::Query q) {
    std::vector<std::int64_t> at;
    const auto rows = s->query(q).value();
    for (const auto& r : rows) at.push_back(r.at_ms);
    return at;
  };
  activity::Query q;
  q.model = "kev";
  CHECK(ids(q) == std::vector<std::int64_t>{3000, 1000});
  q = {};
  REQUIRE(activity::parse_status("error", q));
  CHECK(ids(q) == std::vector<std::int64_t>{3000, 2000});
  q = {};
  REQUIRE(activity::parse_status("5xx", q));
  CHECK(ids(q) == std::vector<std::int64_t>{2000});
  q = {};
  REQUIRE(activity::parse_status("429", q));
  CHECK(ids(q) == std::vector<std::int64_t>{3000});
  CHECK_FALSE(activity::parse_status("2x", q));
  q = {};
  q.client = "agent-7";
  CHECK(ids(q) == std::vector<std::int64_t>{3000});
  q = {};
  q.since_ms = 1500, q.until_ms = 2500;
  CHECK(ids(q) == std::vector<std::int64_t>{2000});
  q = {};
  q.limit = 2;
  auto page = s->query(q).value();
  REQUIRE(page.size() == 2);
  q.before_id = page.back().id;
  CHECK(ids(q) == std::vector<std::int64_t>{1000});
}

TEST_CASE("since accepts 30s, 15m, 1h, 2d ago or unix ms, and names a bad one", "[activity]") {
  CHECK(activity::parse_time("1h", 10'000'000).value() == 10'000'000 - 3'600'000);
  CHECK(activity::parse_time("2d", 500'000'000).value() == 500'000'000 - 172'800'000);
  CHECK(activity::parse_time("1700000000000", 0).value() == 1700000000000);
  CHECK_FALSE(activity::parse_time("1w", 0));
  CHECK_FALSE(activity::parse_time("yesterday", 0));
}

TEST_CASE("CSV rows quote what needs quoting and leave unknown figures empty", "[activity]") {
  Record r = rec("kev", 200, 1000);
  r.user_agent = "agent, \"v2\"";
  const auto row = activity::csv_row(r);
  CHECK(row.find("\"agent, \"\"v2\"\"\"") != std::string::npos);
  CHECK(row.find(",42.50,") != std::string::npos);
  const auto commas = [](std::string_view s) { return std::count(s.begin(), s.end(), ','); };
  CHECK(commas(activity::csv_header()) == commas(activity::csv_row(rec("kev", 200, 1))));
}

TEST_CASE("the recorder writes off the caller's thread and its file survives the recorder", "[activity]") {
  test::TempDir dir("activity-recorder");
  {
    activity::Recorder r({dir / "a.db", {}, 100});
    const auto now = activity::unix_ms();  // within max_age: nothing is pruned
    for (int i = 0; i < 50; ++i) r.submit(rec("kev", 200, now + i));
    REQUIRE(written(r, 50));
    CHECK(r.stats().error.empty());
  }
  auto s = open_store(dir / "a.db");
  CHECK(s->count().value() == 50);
}

TEST_CASE("a history that cannot be written costs records, says why, and never blocks", "[activity]") {
  test::TempDir dir("activity-fail");
  test::write_text(dir / "file", "not a folder");
  activity::Recorder r({dir / "file" / "a.db", {}, 100});  // its folder is a file: cannot be created
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) r.submit(rec("kev", 200, i));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  test::eventually([&] { return r.stats().dropped >= 1000; });
  const auto st = r.stats();
  CHECK(st.dropped == 1000);
  CHECK(st.written == 0);
  CHECK(st.error.find("cannot open") != std::string::npos);
  std::atomic<bool> answered{false};
  r.query({}, [&](Result<std::vector<Record>> rows) { answered = !rows; });
  CHECK(test::eventually([&] { return answered.load(); }));
}

TEST_CASE("a full disk (/dev/full) costs records, not the caller", "[activity]") {
  test::TempDir dir("activity-full");
  std::error_code ec;
  std::filesystem::create_symlink("/dev/full", dir / "a.db", ec);
  if (ec || !std::filesystem::exists("/dev/full")) KEVLAYA_SKIP("no /dev/full here");
  activity::Recorder r({dir / "a.db", {}, 100});
  r.submit(rec("kev", 200, 1));
  test::eventually([&] { return r.stats().dropped >= 1; });
  CHECK(r.stats().dropped == 1);
  CHECK_FALSE(r.stats().error.empty());
}
