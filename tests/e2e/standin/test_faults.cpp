// Fault flags, signals, slots, metrics and auth of the stand-in.
#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;
using nlohmann::json;

namespace {

std::vector<std::string> args(std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"-m", model_path(), "--port", "0"});
  return extra;
}

std::string chat_body(const std::string& text, bool stream = false) {
  return json{{"messages", {{{"role", "user"}, {"content", text}}}}, {"stream", stream}}.dump();
}

bool wait_until_refused(int port) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (http_request(port, "GET", "/health", "", {}, 200ms).status == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

TEST_CASE("first SIGTERM exits 0 after cleaning up", "[standin]") {
  TempDir dir("standin-term");
  StandinProcess p(args({}), dir / "log");
  REQUIRE(p.wait_ready() > 0);
  p.send_signal(SIGTERM);
  CHECK(p.wait_exit() == 0);
  CHECK(p.log().find("cleaning up before exit") != std::string::npos);
}

TEST_CASE("SIGTERM during a request finishes it and exits 0, a second SIGTERM exits 1 at once", "[standin]") {
  TempDir dir("standin-term2");
  StandinProcess p(args({"--fake-token-ms", "100", "-lv", "4"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  HttpReply reply;
  std::thread client([&] { reply = http_request(port, "POST", "/v1/chat/completions", chat_body("long one")); });
  const bool started = p.wait_for_log("processing task");
  p.send_signal(SIGTERM);
  client.join();
  REQUIRE(started);
  CHECK(reply.status == 200);
  CHECK(p.wait_exit() == 0);

  StandinProcess q(args({"--fake-token-ms", "500", "-lv", "4"}), dir / "log2");
  const int port2 = q.wait_ready();
  REQUIRE(port2 > 0);
  std::thread client2([&] { http_request(port2, "POST", "/v1/chat/completions", chat_body("long one")); });
  const bool started2 = q.wait_for_log("processing task");
  q.send_signal(SIGTERM);
  // Standard signals do not queue: send the second only once the first was handled, which is
  // visible as the listening socket closing (the server stops accepting when shutdown starts).
  const bool draining = wait_until_refused(port2);
  q.send_signal(SIGTERM);
  const auto code = q.wait_exit();
  client2.join();
  REQUIRE(started2);
  REQUIRE(draining);
  CHECK(code == 1);
  CHECK(q.log().find("Received second interrupt, terminating immediately.") != std::string::npos);
}

TEST_CASE("fake-ignore-sigterm survives SIGTERM and dies only by SIGKILL", "[standin]") {
  TempDir dir("standin-ignore");
  StandinProcess p(args({"--fake-ignore-sigterm"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  p.send_signal(SIGTERM);
  CHECK(http_request(port, "GET", "/health").status == 200);  // answered after the signal was delivered
  CHECK_FALSE(p.wait_exit(300ms).has_value());
  p.send_signal(SIGKILL);
  CHECK(p.wait_exit() == 128 + SIGKILL);
}

TEST_CASE("fake-crash-after aborts on the request after N", "[standin]") {
  TempDir dir("standin-crash");
  StandinProcess p(args({"--fake-crash-after", "2"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  CHECK(http_request(port, "POST", "/completion", json{{"prompt", "1"}}.dump()).status == 200);
  CHECK(http_request(port, "POST", "/completion", json{{"prompt", "2"}}.dump()).status == 200);
  CHECK(http_request(port, "POST", "/completion", json{{"prompt", "3"}}.dump()).status == 0);
  CHECK(p.wait_exit() == 128 + SIGABRT);
}

TEST_CASE("fake-crash-mid-stream aborts after some chunks", "[standin]") {
  TempDir dir("standin-midstream");
  StandinProcess p(args({"--fake-crash-mid-stream"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  const auto r = http_request(port, "POST", "/v1/chat/completions", chat_body("crash please", true));
  CHECK(r.status == 200);
  CHECK_FALSE(sse_events(r.body).empty());
  CHECK(r.body.find("[DONE]") == std::string::npos);
  CHECK(p.wait_exit() == 128 + SIGABRT);
}

TEST_CASE("fake-hang-health never answers /health but serves the rest", "[standin]") {
  TempDir dir("standin-hang");
  StandinProcess p(args({"--fake-hang-health"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  CHECK(http_request(port, "GET", "/health", "", {}, 500ms).status == 0);
  CHECK(http_request(port, "GET", "/v1/models").status == 200);
}

TEST_CASE("slot save and restore make the next prompt cheaper", "[standin]") {
  TempDir dir("standin-slots");
  std::filesystem::create_directories(dir / "slots");
  const std::string long_prompt = [] {
    std::string s;
    for (int i = 0; i < 300; i++) s += " word" + std::to_string(i);
    return s;
  }();
  const json req = {{"prompt", long_prompt}, {"n_predict", 4}};
  double first_ms = 0;
  {
    StandinProcess a(args({"--slot-save-path", (dir / "slots").string(), "-np", "1", "--fake-prefill-us-per-token", "1000"}), dir / "a");
    const int port = a.wait_ready();
    REQUIRE(port > 0);
    const json r = json::parse(http_request(port, "POST", "/completion", req.dump()).body);
    first_ms = r["timings"]["prompt_ms"];
    CHECK(r["timings"]["cache_n"] == 0);
    const auto save = http_request(port, "POST", "/slots/0?action=save", json{{"filename", "s0.bin"}}.dump());
    REQUIRE(save.status == 200);
    CHECK(json::parse(save.body)["n_saved"].get<int>() > 300);
  }
  CHECK(std::filesystem::file_size(dir / "slots" / "s0.bin") > 0);
  StandinProcess b(args({"--slot-save-path", (dir / "slots").string(), "-np", "1", "--fake-prefill-us-per-token", "1000"}), dir / "b");
  const int port = b.wait_ready();
  REQUIRE(port > 0);
  const auto missing = http_request(port, "POST", "/slots/0?action=restore", json{{"filename", "nope.bin"}}.dump());
  CHECK(missing.status == 400);
  CHECK(json::parse(missing.body)["error"]["message"] ==
        "Unable to restore slot: No available space in KV cache or invalid slot save file");
  REQUIRE(http_request(port, "POST", "/slots/0?action=restore", json{{"filename", "s0.bin"}}.dump()).status == 200);
  const json r = json::parse(http_request(port, "POST", "/completion", req.dump()).body);
  // Everything but the last prompt token comes from the restored cache.
  CHECK(r["timings"]["cache_n"].get<int>() == r["tokens_evaluated"].get<int>() - 1);
  CHECK(r["timings"]["prompt_ms"].get<double>() < first_ms / 10);
}

TEST_CASE("slot actions without --slot-save-path answer 501 like the real server", "[standin]") {
  TempDir dir("standin-noslots");
  StandinProcess p(args({}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  const auto r = http_request(port, "POST", "/slots/0?action=save", json{{"filename", "x"}}.dump());
  CHECK(r.status == 501);
  CHECK(json::parse(r.body)["error"]["type"] == "not_supported_error");
  CHECK(http_request(port, "GET", "/metrics").status == 501);
  CHECK(http_request(port, "GET", "/nope").status == 404);
}

TEST_CASE("metrics count tokens in Prometheus text with --metrics", "[standin]") {
  TempDir dir("standin-metrics");
  StandinProcess p(args({"--metrics"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  const json r = json::parse(http_request(port, "POST", "/completion", json{{"prompt", "count me"}}.dump()).body);
  const auto m = http_request(port, "GET", "/metrics");
  CHECK(m.status == 200);
  CHECK(m.header("content-type").find("text/plain; version=0.0.4") != std::string::npos);
  CHECK(m.body.find("# TYPE llamacpp:tokens_predicted_total counter") != std::string::npos);
  CHECK(m.body.find("llamacpp:tokens_predicted_total " + std::to_string(r["tokens_predicted"].get<int>()) + "\n") !=
        std::string::npos);
}

TEST_CASE("api key guards everything but health and models", "[standin]") {
  TempDir dir("standin-auth");
  StandinProcess p(args({"--api-key", "sekrit"}), dir / "log");
  const int port = p.wait_ready();
  REQUIRE(port > 0);
  CHECK(http_request(port, "GET", "/health").status == 200);
  CHECK(http_request(port, "GET", "/v1/models").status == 200);
  const auto denied = http_request(port, "GET", "/props");
  CHECK(denied.status == 401);
  CHECK(json::parse(denied.body)["error"]["type"] == "authentication_error");
  CHECK(http_request(port, "GET", "/props", "", {{"Authorization", "Bearer sekrit"}}).status == 200);
}
