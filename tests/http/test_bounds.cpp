// Bounded everything at the door: JSON nesting depth of every body (a 100,000-deep array in a
// body re-serialized for an alias crashed serve) and bounded pipeline runs (count and bytes).
#include <catch2/catch.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>

#include "common/bounded_json.hpp"
#include "door_fixture.hpp"

using namespace kevlaya::test;
namespace asio = boost::asio;

namespace {

// {"model":M,"messages":[...],"extra":[[[...]]]} with `depth` levels in total.
std::string nested_body(const std::string& model, std::size_t depth) {
  const std::size_t arrays = depth - 1;  // the outer object is level 1
  std::string body = R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}],"extra":)";
  body += std::string(arrays, '[') + std::string(arrays, ']') + "}";
  return body;
}

// Holds every run until `release` is set (async wait), so the queue fills.
class HeldRunner : public kevlaya::http::PipelineRunner {
 public:
  asio::awaitable<kevlaya::Result<nlohmann::json>> run_task(std::string, nlohmann::json task) override {
    ++started;
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!release) {
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
    co_return nlohmann::json{{"verdict", "pass"}, {"input", task["input"]}};
  }
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
};

std::string run_body(std::size_t input_bytes) {
  return nlohmann::json{{"input", std::string(input_bytes, 'x')}}.dump();
}

}  // namespace

TEST_CASE("a 100,000-deep JSON array in a chat body with an alias model is a 400 naming the limit (serve crash)",
          "[http]") {
  Door door;
  const auto body = nested_body("k", 100000);  // ~200 KB; "k" is an alias of kev: the body is rewritten
  REQUIRE(body.size() > 190000);
  auto r = http_request(door.port(), "POST", "/v1/chat/completions", body);
  CHECK(r.status == 400);
  const std::string msg = r.json_body()["error"]["message"];
  CHECK(msg.find("deeper than " + std::to_string(kevlaya::kMaxJsonDepth)) != std::string::npos);
  CHECK(door.upstream().requests == 0);
  CHECK(http_request(door.port(), "GET", "/health").status == 200);  // still serving
}

TEST_CASE("a chat body nested exactly to the depth limit is forwarded, alias rewritten", "[http]") {
  Door door;
  auto ok = http_request(door.port(), "POST", "/v1/chat/completions", nested_body("k", kevlaya::kMaxJsonDepth));
  REQUIRE(ok.status == 200);
  CHECK(ok.json_body()["echo"]["model"] == "kev");
  auto over = http_request(door.port(), "POST", "/v1/chat/completions", nested_body("k", kevlaya::kMaxJsonDepth + 1));
  CHECK(over.status == 400);
}

TEST_CASE("a deep extra task field in POST /v1/pipelines/{name}/runs is a 400 naming the limit", "[http]") {
  auto runner = std::make_shared<HeldRunner>();
  runner->release = true;
  DoorOptions o;
  o.runner = runner;
  Door door(o);
  const std::string body = R"({"input":"x","extra":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs", body);
  CHECK(r.status == 400);
  CHECK(std::string(r.json_body()["error"]["message"]).find("deeper than") != std::string::npos);
  CHECK(runner->started == 0);
}

TEST_CASE("async pipeline runs past runs.max_queued get 429 with Retry-After, shown in /status and /metrics",
          "[http]") {
  auto runner = std::make_shared<HeldRunner>();
  DoorOptions o;
  o.runner = runner;
  o.runs.max_queued = 3;
  Door door(o);
  for (int i = 0; i < 3; ++i)
    REQUIRE(http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(10)).status == 202);
  auto refused = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(10));
  CHECK(refused.status == 429);
  CHECK(refused.json_body()["error"]["code"] == "queue_full");
  CHECK(std::stoi(refused.header("retry-after")) >= 1);
  auto st = http_request(door.port(), "GET", "/status").json_body()["pipeline_runs"];
  CHECK(st["queued"] == 3);
  CHECK(st["refused"] == 1);
  CHECK(st["max_queued"] == 3);
  const auto m = http_request(door.port(), "GET", "/metrics").body;
  CHECK(m.find("kevlaya_pipeline_runs_queued 3\n") != std::string::npos);
  CHECK(m.find("kevlaya_pipeline_runs_refused_total 1\n") != std::string::npos);
  runner->release = true;
  nlohmann::json after;
  for (int i = 0; i < 2000; ++i) {  // the held runs finish within a few ms of the release
    after = http_request(door.port(), "GET", "/status").json_body()["pipeline_runs"];
    if (after["queued"] == 0) break;
  }
  CHECK(after["queued"] == 0);
  CHECK(http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(10)).status == 202);
}

TEST_CASE("pipeline runs past runs.max_queued_bytes get 429, one body over it is 413", "[http]") {
  auto runner = std::make_shared<HeldRunner>();
  DoorOptions o;
  o.runner = runner;
  o.runs.max_queued_bytes = 10000;
  Door door(o);
  REQUIRE(http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(6000)).status == 202);
  auto refused = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(6000));
  CHECK(refused.status == 429);
  CHECK(!refused.header("retry-after").empty());
  CHECK(http_request(door.port(), "GET", "/status").json_body()["pipeline_runs"]["queued_bytes"] > 6000);
  CHECK(http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", run_body(20000)).status == 413);
  runner->release = true;
}

TEST_CASE("finished runs are forgotten past runs.max_kept_bytes, oldest first", "[http]") {
  auto runner = std::make_shared<HeldRunner>();
  runner->release = true;
  DoorOptions o;
  o.runner = runner;
  o.runs.max_kept_bytes = 5000;
  Door door(o);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {  // sync: each returns when its run is done; ~2 KB records
    auto r = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs", run_body(2000));
    REQUIRE(r.status == 200);
    ids.push_back(r.header("x-kevlaya-run"));
  }
  CHECK(http_request(door.port(), "GET", "/v1/runs/" + ids.front()).status == 404);
  CHECK(http_request(door.port(), "GET", "/v1/runs/" + ids.back()).status == 200);
  CHECK(http_request(door.port(), "GET", "/status").json_body()["pipeline_runs"]["kept_bytes"] <= 5000);
}
