// The request record and the persisted history over real sockets (docs/http.md "Activity").
#include <catch2/catch.hpp>

#include "door_fixture.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

// GET /activity?`query` until it lists `n` records (the history is written off the request path).
json records(std::uint16_t port, const std::string& query, std::size_t n) {
  json rows = json::array();
  eventually([&] {
    auto r = http_request(port, "GET", "/activity" + query);
    rows = r.status == 200 ? r.json_body()["records"] : json::array();
    return rows.size() >= n;
  });
  return rows;
}

DoorOptions with_history(const TempDir& dir) {
  DoorOptions o;
  o.state_dir = dir.path();
  return o;
}

}  // namespace

TEST_CASE("a model call leaves one record: client, session, API, model, waits, timings", "[http][activity]") {
  TempDir dir("door-activity-record");
  Door door(with_history(dir));
  const auto body = chat_body("kev");
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", body,
                        {{"User-Agent", "agent/1.0"}, {"X-Session-ID", "s-42"}});
  REQUIRE(r.status == 200);
  auto rows = records(door.port(), "", 1);
  REQUIRE(rows.size() == 1);
  const auto& rec = rows[0];
  CHECK(rec["client"] == "127.0.0.1");
  CHECK(rec["user_agent"] == "agent/1.0");
  CHECK(rec["session"] == "s-42");
  CHECK(rec["api"] == "openai");
  CHECK(rec["model"] == "kev");
  CHECK(rec["child"] == "kev");
  CHECK(rec["endpoint"] == "/v1/chat/completions");
  CHECK(rec["status"] == 200);
  CHECK(rec["error"].is_null());
  CHECK(rec["bytes_in"] == body.size());
  CHECK(rec["bytes_out"] == r.body.size());
  CHECK(rec["queue_ms"].get<std::int64_t>() >= 0);
  CHECK(rec["swap_ms"].get<std::int64_t>() >= 0);
  CHECK(rec["ttft_ms"].get<std::int64_t>() <= rec["total_ms"].get<std::int64_t>());
  // The scripted child's timings: prompt_n 3, predicted_n 2, 2000 and 100 tokens/s.
  CHECK(rec["prompt_tokens"] == 3);
  CHECK(rec["generated_tokens"] == 2);
  CHECK(rec["prefill_tps"] == 2000.0);
  CHECK(rec["decode_tps"] == 100.0);
  CHECK(rec["run"].is_null());
}

TEST_CASE("a streamed call's record has its time to first token and the stream's timings", "[http][activity]") {
  TempDir dir("door-activity-stream");
  Door door(with_history(dir));
  door.upstream().release_second.set();
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "stream", true));
  REQUIRE(r.status == 200);
  auto rows = records(door.port(), "", 1);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["ttft_ms"].get<std::int64_t>() >= 0);
  CHECK(rows[0]["bytes_out"].get<std::int64_t>() > 0);
  CHECK(rows[0]["decode_tps"] == 100.0);
  CHECK(rows[0]["generated_tokens"] == 2);
}

TEST_CASE("failed calls are recorded with their status and error kind", "[http][activity]") {
  TempDir dir("door-activity-errors");
  Door door(with_history(dir));
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("nope")).status == 404);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "error")).status == 400);
  auto rows = records(door.port(), "?status=error", 2);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["status"] == 400);
  CHECK(rows[0]["error"] == "upstream_error");
  CHECK(rows[1]["status"] == 404);
  CHECK(rows[1]["error"] == "not_found");
  CHECK(rows[1]["model"] == "");
}

TEST_CASE("the session comes from the configured headers, the first one present", "[http][activity]") {
  TempDir dir("door-activity-session");
  auto o = with_history(dir);
  o.activity.session_headers = {"X-Agent-Run", "X-Session-ID"};
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev"),
                       {{"X-Session-ID", "second"}, {"X-Agent-Run", "first"}}).status == 200);
  auto rows = records(door.port(), "?client=first", 1);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["session"] == "first");
}

TEST_CASE("GET /activity filters, pages and exports CSV, and a bad filter is a 400 naming it", "[http][activity]") {
  TempDir dir("door-activity-query");
  Door door(with_history(dir));
  for (const char* m : {"kev", "laya", "kev"})
    REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body(m)).status == 200);
  REQUIRE(records(door.port(), "", 3).size() == 3);
  CHECK(records(door.port(), "?model=laya", 1).size() == 1);
  auto page = http_request(door.port(), "GET", "/activity?limit=2").json_body();
  REQUIRE(page["records"].size() == 2);
  REQUIRE(page["next_before"].is_number());
  auto rest = http_request(door.port(), "GET", "/activity?before=" + page["next_before"].dump()).json_body();
  CHECK(rest["records"].size() == 1);
  CHECK(rest["next_before"].is_null());
  auto csv = http_request(door.port(), "GET", "/activity?format=csv&model=kev&since=1h");
  REQUIRE(csv.status == 200);
  CHECK(csv.header("content-type").rfind("text/csv", 0) == 0);
  CHECK(csv.body.rfind("id,at_ms,client,", 0) == 0);
  CHECK(count_of(csv.body, "\n") == 3);  // the header and two rows
  auto bad = http_request(door.port(), "GET", "/activity?since=yesterday");
  CHECK(bad.status == 400);
  CHECK(bad.body.find("since") != std::string::npos);
}

TEST_CASE("the history survives a restart of the door", "[http][activity]") {
  TempDir dir("door-activity-restart");
  {
    Door door(with_history(dir));
    REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya")).status == 200);
    REQUIRE(records(door.port(), "", 1).size() == 1);
  }
  Door door(with_history(dir));
  auto rows = records(door.port(), "", 1);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["model"] == "laya");
}

TEST_CASE("a history that cannot be written costs no request and says so in /status", "[http][activity]") {
  TempDir dir("door-activity-broken");
  write_text(dir / "state", "a file where the state folder should be");
  DoorOptions o;
  o.state_dir = dir / "state";
  Door door(o);
  for (int i = 0; i < 3; ++i)
    CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  json st;
  eventually([&] {
    st = http_request(door.port(), "GET", "/status").json_body()["activity"];
    return st["dropped"] == 3;
  });
  CHECK(st["enabled"] == true);
  CHECK(st["dropped"] == 3);
  CHECK(st["written"] == 0);
  CHECK(st["error"].get<std::string>().find("cannot open") != std::string::npos);
  CHECK(http_request(door.port(), "GET", "/activity").status == 503);
}

TEST_CASE("without a history GET /activity says how to turn it on", "[http][activity]") {
  Door door;
  auto r = http_request(door.port(), "GET", "/activity");
  CHECK(r.status == 503);
  CHECK(r.body.find("activity.enabled") != std::string::npos);
  CHECK(http_request(door.port(), "GET", "/status").json_body()["activity"]["enabled"] == false);
}

namespace {

// A pipeline whose journal record has two calls: decide on kev (with timings), verify on laya (failed).
class TwoCallRunner : public kevlaya::http::PipelineRunner {
 public:
  boost::asio::awaitable<kevlaya::Result<json>> run_task(std::string, json) override {
    const json timings = {{"prompt_n", 5}, {"cache_n", 2}, {"predicted_n", 9}, {"prompt_per_second", 500.0},
                          {"predicted_per_second", 80.0}};
    co_return json{{"verdict", "error"},
                   {"attempts", {{{"stage", "decide"}, {"model", "kev"}, {"profile", "kev"}, {"timings", timings},
                                  {"queue_ms", 3}, {"switch_ms", 0}, {"call_ms", 12.5}},
                                 {{"stage", "verify"}, {"model", "laya"},
                                  {"error", {{"code", "timeout"}, {"message", "no slot"}}}}}}};
  }
};

}  // namespace

TEST_CASE("each model call of a pipeline run is recorded with its run and stage", "[http][activity]") {
  TempDir dir("door-activity-pipeline");
  auto o = with_history(dir);
  o.runner = std::make_shared<TwoCallRunner>();
  Door door(o);
  auto r = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs", R"({"input":"x"})");
  REQUIRE(r.status == 200);
  const auto run = r.header("x-kevlaya-run");
  REQUIRE_FALSE(run.empty());
  auto rows = records(door.port(), "", 2);
  REQUIRE(rows.size() == 2);
  const auto& verify = rows[0];
  const auto& decide = rows[1];
  CHECK(decide["api"] == "pipeline");
  CHECK(decide["run"] == run);
  CHECK(decide["stage"] == "decide");
  CHECK(decide["model"] == "kev");
  CHECK(decide["status"] == 200);
  CHECK(decide["queue_ms"] == 3);
  CHECK(decide["total_ms"] == 15);
  CHECK(decide["generated_tokens"] == 9);
  CHECK(decide["cached_tokens"] == 2);
  CHECK(decide["decode_tps"] == 80.0);
  CHECK(decide["endpoint"] == "/v1/pipelines/decide-verify/runs");
  CHECK(verify["stage"] == "verify");
  CHECK(verify["model"] == "laya");
  CHECK(verify["status"] == 504);
  CHECK(verify["error"] == "timeout");
}
