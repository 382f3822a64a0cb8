// Prometheus exposition (parsed, not string-matched) and pipeline runs through a fake runner.
#include <catch2/catch.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <set>
#include <sstream>

#include "door_fixture.hpp"
#include "http/bodies.hpp"
#include "http/metrics.hpp"

using namespace kevlaya::test;
namespace asio = boost::asio;

namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// A strict-enough parser of the text format: returns samples and fills `types`; fails the test
// on a malformed line.
std::vector<Sample> parse_exposition(const std::string& text, std::map<std::string, std::string>& types) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream l(line.substr(7));
      std::string n, t;
      l >> n >> t;
      types[n] = t;
      continue;
    }
    if (line.rfind("#", 0) == 0 || line.empty()) continue;
    Sample s;
    auto brace = line.find('{');
    auto space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    s.name = line.substr(0, brace != std::string::npos ? brace : space);
    if (brace != std::string::npos) {
      auto close = line.rfind('}');
      REQUIRE(close != std::string::npos);
      std::string body = line.substr(brace + 1, close - brace - 1);
      std::size_t i = 0;
      while (i < body.size()) {
        auto eq = body.find('=', i);
        REQUIRE(eq != std::string::npos);
        REQUIRE(body[eq + 1] == '"');
        std::string key = body.substr(i, eq - i), val;
        std::size_t j = eq + 2;
        for (; j < body.size() && body[j] != '"'; ++j) {
          if (body[j] == '\\') ++j;  // escaped char
          val += body[j];
        }
        REQUIRE(j < body.size());
        s.labels[key] = val;
        i = j + 1;
        if (i < body.size()) {
          REQUIRE(body[i] == ',');
          ++i;
        }
      }
    }
    const std::string v = line.substr(space + 1);
    s.value = v == "+Inf" ? INFINITY : std::stod(v);
    out.push_back(s);
  }
  return out;
}

std::string family_of(const std::string& sample, const std::map<std::string, std::string>& types) {
  if (types.count(sample)) return sample;
  for (const char* suf : {"_bucket", "_sum", "_count"}) {
    const std::string s(suf);
    if (sample.size() > s.size() && sample.substr(sample.size() - s.size()) == s) {
      auto base = sample.substr(0, sample.size() - s.size());
      if (types.count(base) && types.at(base) == "histogram") return base;
    }
  }
  return {};
}

void check_well_formed(const std::string& text) {
  std::map<std::string, std::string> types;
  auto samples = parse_exposition(text, types);
  REQUIRE_FALSE(samples.empty());
  std::map<std::string, std::vector<Sample>> buckets;  // family+labels(without le) -> buckets
  for (const auto& s : samples) {
    const auto fam = family_of(s.name, types);
    INFO(s.name);
    REQUIRE_FALSE(fam.empty());  // every sample's metric has a TYPE
    if (types[fam] == "counter") CHECK(fam.size() > 6);
    if (types[fam] == "counter") CHECK(fam.substr(fam.size() - 6) == "_total");
    if (s.name == fam + "_bucket") {
      auto key = s.labels;
      key.erase("le");
      std::string k = fam;
      for (auto& [a, b] : key) k += "|" + a + "=" + b;
      buckets[k].push_back(s);
    }
  }
  for (const auto& [k, bs] : buckets) {
    INFO(k);
    REQUIRE(bs.back().labels.at("le") == "+Inf");
    for (std::size_t i = 1; i < bs.size(); ++i) {
      CHECK(bs[i].value >= bs[i - 1].value);  // cumulative
      CHECK(std::stod(bs[i].labels.at("le") == "+Inf" ? "inf" : bs[i].labels.at("le")) >
            std::stod(bs[i - 1].labels.at("le")));
    }
  }
}

}  // namespace

TEST_CASE("metrics exposition escapes labels and writes cumulative histograms", "[http]") {
  kevlaya::http::Metrics m;
  m.describe("x_total", kevlaya::http::Metrics::Type::counter, "help with \\ and\nnewline");
  m.describe("lat_seconds", kevlaya::http::Metrics::Type::histogram, "latency", {0.1, 1});
  m.inc("x_total", {{"model", "a\"b\\c\nd"}});
  m.observe("lat_seconds", {}, 0.05);
  m.observe("lat_seconds", {}, 0.5);
  m.observe("lat_seconds", {}, 5);
  const auto text = m.render();
  CHECK(text.find(R"(x_total{model="a\"b\\c\nd"} 1)") != std::string::npos);
  CHECK(text.find("# HELP x_total help with \\\\ and\\nnewline") != std::string::npos);
  CHECK(text.find("lat_seconds_bucket{le=\"0.1\"} 1\n") != std::string::npos);
  CHECK(text.find("lat_seconds_bucket{le=\"1\"} 2\n") != std::string::npos);
  CHECK(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("lat_seconds_count 3\n") != std::string::npos);
  check_well_formed(text);
  CHECK_THROWS(m.describe("bad_counter", kevlaya::http::Metrics::Type::counter, "no suffix"));
}

TEST_CASE("metrics: updates by label views and by built labels meet in one series, in label order", "[http]") {
  kevlaya::http::Metrics m;
  m.describe("x_total", kevlaya::http::Metrics::Type::counter, "calls");
  const std::string model = "kev";
  m.inc("x_total", {{"model", model}, {"status", "200"}});
  m.set("x_total", kevlaya::http::Labels{{"model", "kev"}, {"status", "200"}}, 5);
  m.inc("x_total", {{"model", std::string_view("kev")}, {"status", std::to_string(200)}}, 2);
  m.inc("x_total", {{"model", "kev"}, {"status", "20"}});   // a prefix of the other value: its own series, first
  m.inc("x_total", {{"model", "ke"}, {"status", "500"}});   // a shorter model sorts before
  const auto text = m.render();
  CHECK(text.find("x_total{model=\"kev\",status=\"200\"} 7\n") != std::string::npos);
  const auto a = text.find("model=\"ke\",");
  const auto b = text.find("status=\"20\"}");
  const auto c = text.find("status=\"200\"}");
  REQUIRE((a != std::string::npos && b != std::string::npos && c != std::string::npos));
  CHECK((a < b && b < c));
}

// Each family remembers the series it updated last (the door updates the same few per request).
TEST_CASE("metrics: the series updated last is found again, another is not mistaken for it, clear() forgets it", "[http]") {
  kevlaya::http::Metrics m;
  m.describe("g", kevlaya::http::Metrics::Type::gauge, "a gauge");
  m.set("g", {{"model", "kev"}}, 1);
  m.inc("g", {{"model", "kev"}}, 2);  // the last series again
  m.inc("g", {{"model", "laya"}});
  m.inc("g", {{"model", "ke"}});      // a prefix of the last one's value
  m.inc("g", {});                     // fewer labels
  m.inc("g", {{"model", "kev"}});
  auto text = m.render();
  CHECK(text.find("g{model=\"kev\"} 4\n") != std::string::npos);
  CHECK(text.find("g{model=\"laya\"} 1\n") != std::string::npos);
  CHECK(text.find("g{model=\"ke\"} 1\n") != std::string::npos);
  CHECK(text.find("g 1\n") != std::string::npos);
  m.clear("g");
  m.inc("g", {{"model", "kev"}});  // a new series: the cleared one is gone
  text = m.render();
  CHECK(text.find("g{model=\"kev\"} 1\n") != std::string::npos);
  CHECK(text.find("laya") == std::string::npos);
}

TEST_CASE("/metrics is well-formed and counts requests, switches and tokens/s", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya")).status == 200);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("nobody")).status == 404);
  auto r = http_request(door.port(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type").find("text/plain; version=0.0.4") == 0);
  check_well_formed(r.body);
  std::map<std::string, std::string> types;
  auto samples = parse_exposition(r.body, types);
  auto value = [&](const std::string& name, std::map<std::string, std::string> labels) {
    for (const auto& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    return -1.0;
  };
  CHECK(value("kevlaya_requests_total", {{"model", "kev"}, {"status", "200"}}) == 1);
  CHECK(value("kevlaya_requests_total", {{"model", "(unknown)"}, {"status", "404"}}) == 1);
  CHECK(value("kevlaya_switches_total", {{"result", "ok"}}) >= 2);
  CHECK(value("kevlaya_switch_phase_seconds_count", {{"phase", "total"}}) >= 2);
  CHECK(value("kevlaya_generation_tokens_per_second_count", {{"model", "kev"}}) == 1);
  CHECK(value("kevlaya_generation_tokens_per_second_sum", {{"model", "kev"}}) == 100);
  CHECK(value("kevlaya_model_state", {{"model", "laya"}, {"state", "ready"}}) == 1);
  CHECK(types.at("kevlaya_child_restarts_total") == "counter");
}

TEST_CASE("a streamed answer's timings reach /metrics too", "[http]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev", "", true)).status == 200);
  const auto r = http_request(door.port(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  std::map<std::string, std::string> types;
  double count = -1;
  for (const auto& s : parse_exposition(r.body, types))
    if (s.name == "kevlaya_generation_tokens_per_second_count" && s.labels.at("model") == "kev") count = s.value;
  CHECK(count == 1);
}

TEST_CASE("timings_of takes the answer's last timings object, never one quoted in content", "[http]") {
  using kevlaya::http::timings_of;
  const auto t = timings_of(R"({"content":"x \"timings\":{\"predicted_per_second\":9}","timings" : {"predicted_per_second":12.5,"n":{"a":"}","prompt_per_second":7}}})");
  REQUIRE(t);
  CHECK(t->predicted_per_second == 12.5);
  CHECK_FALSE(t->prompt_per_second);  // nested: not the object's own field
  // A stream's tail: the last event with timings wins.
  const auto s = timings_of("data: {\"timings\":{\"prompt_per_second\":1}}\n\ndata: {\"timings\":{\"prompt_per_second\":2}}\n\n");
  REQUIRE(s);
  CHECK(s->prompt_per_second == 2);
  CHECK_FALSE(s->predicted_per_second);
  // "timings" as a value is skipped; an earlier key still counts.
  CHECK(timings_of(R"({"timings":{"predicted_per_second":1,"prompt_per_second":3},"label":"timings"})")->prompt_per_second == 3);
  // Not a number: absent. Integers count.
  const auto odd = timings_of(R"({"timings":{"predicted_per_second":"fast","prompt_per_second":40}})");
  REQUIRE(odd);
  CHECK_FALSE(odd->predicted_per_second);
  CHECK(odd->prompt_per_second == 40);
  CHECK_FALSE(timings_of(R"({"content":"no timings here"})"));
  CHECK_FALSE(timings_of(R"({"timings":{"a":1)"));  // cut off
  CHECK_FALSE(timings_of(R"({"timings":[1,2]})"));
  CHECK_FALSE(timings_of(R"({"timings":{"a":tru}})"));  // malformed
}

namespace {

// Runs tasks with a short async wait and records how many ran at once.
class FakeRunner : public kevlaya::http::PipelineRunner {
 public:
  asio::awaitable<kevlaya::Result<nlohmann::json>> run_task(std::string name, nlohmann::json task) override {
    const int now = ++active;
    max_active = std::max(max_active.load(), now);
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(std::chrono::milliseconds(30));
    co_await t.async_wait(asio::use_awaitable);
    --active;
    if (task["input"] == "boom")
      co_return kevlaya::make_error(kevlaya::Errc::upstream_error, "verify stage failed");
    co_return nlohmann::json{{"pipeline", name}, {"input", task["input"]}, {"verdict", "pass"}};
  }
  std::atomic<int> active{0};
  std::atomic<int> max_active{0};
};

}  // namespace

TEST_CASE("pipeline runs: sync record, async 202 + GET, never interleaved", "[http]") {
  auto runner = std::make_shared<FakeRunner>();
  DoorOptions o;
  o.runner = runner;
  Door door(o);
  std::vector<std::future<HttpReply>> calls;
  for (int i = 0; i < 4; ++i)
    calls.push_back(std::async(std::launch::async, [&, i] {
      return http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs",
                          nlohmann::json{{"input", "task " + std::to_string(i)}}.dump());
    }));
  for (int i = 0; i < 4; ++i) {
    auto r = calls[static_cast<std::size_t>(i)].get();
    REQUIRE(r.status == 200);
    CHECK(r.json_body()["verdict"] == "pass");
    CHECK(r.json_body()["input"] == "task " + std::to_string(i));
  }
  CHECK(runner->max_active == 1);

  auto a = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs?async=1", R"({"input":"later"})");
  REQUIRE(a.status == 202);
  const std::string id = a.json_body()["id"];
  CHECK(a.header("location") == "/v1/runs/" + id);
  nlohmann::json got;
  for (int i = 0; i < 1000; ++i) {  // the run finishes within ~30 ms; each poll is a round trip
    got = http_request(door.port(), "GET", "/v1/runs/" + id).json_body();
    if (got["status"] == "done") break;
  }
  CHECK(got["status"] == "done");
  CHECK(got["record"]["input"] == "later");

  CHECK(http_request(door.port(), "GET", "/v1/runs/run-nope").status == 404);
  CHECK(http_request(door.port(), "POST", "/v1/pipelines/nope/runs", R"({"input":"x"})").status == 404);
  CHECK(http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs", R"({"x":1})").status == 400);
  auto failed = http_request(door.port(), "POST", "/v1/pipelines/decide-verify/runs", R"({"input":"boom"})");
  CHECK(failed.status == 502);
  auto m = http_request(door.port(), "GET", "/metrics").body;
  CHECK(m.find(R"(kevlaya_pipeline_verdicts_total{pipeline="decide-verify",verdict="pass"} 5)") != std::string::npos);
  CHECK(m.find(R"(kevlaya_pipeline_verdicts_total{pipeline="decide-verify",verdict="error"} 1)") != std::string::npos);
}
