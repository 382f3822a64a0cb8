// GET /events over a real socket: SSE framing (retry hint, one JSON object per event with a type,
// keep-alive comments), several subscribers, and a client too far behind dropped.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

#include "door_fixture.hpp"

using namespace kevlaya::test;

namespace {

const char* kGetEvents = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// The body of a chunked response received so far (whole chunks only).
std::string dechunk(const std::string& raw) {
  auto pos = raw.find("\r\n\r\n");
  if (pos == std::string::npos) return "";
  pos += 4;
  std::string body;
  for (;;) {
    const auto eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const auto size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (size == 0 || eol + 2 + size > raw.size()) break;
    body += raw.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return body;
}

// The JSON objects of the `data:` lines of an SSE body.
std::vector<json> data_events(const std::string& body) {
  std::vector<json> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const auto end = body.find('\n', pos);
    out.push_back(json::parse(body.substr(pos + 6, end - pos - 6), nullptr, false));
    pos = end;
  }
  return out;
}

// The supervisor's events only (the door's own `request` / `queue` events are left out).
std::vector<std::string> summary(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (e["type"] == "phase") out.push_back(e["child"].get<std::string>() + ":" + e["to"].get<std::string>());
    else if (e["type"] == "switch") out.push_back("switch->" + e["to"].get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE("GET /events streams every phase change and switch to several subscribers as SSE", "[http]") {
  Door door;
  std::vector<std::unique_ptr<RawClient>> subs;
  for (int i = 0; i < 3; ++i) {
    subs.push_back(std::make_unique<RawClient>(door.port()));
    subs.back()->send(kGetEvents);
    REQUIRE(subs.back()->read_until("retry: ").find("retry: ") != std::string::npos);
  }
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya")).status == 200);
  std::vector<std::string> first;
  for (auto& s : subs) {
    const auto raw = s->read_until("\"to\":\"ready\"", 10s, 2);
    INFO(raw);
    std::string head = raw.substr(0, raw.find("\r\n\r\n"));
    std::transform(head.begin(), head.end(), head.begin(), ::tolower);
    CHECK(head.rfind("http/1.1 200", 0) == 0);
    CHECK(head.find("content-type: text/event-stream") != std::string::npos);
    CHECK(head.find("transfer-encoding: chunked") != std::string::npos);
    const auto body = dechunk(raw);
    CHECK(body.rfind("retry: 2000\n\n", 0) == 0);
    const auto events = data_events(body);
    for (const auto& e : events) {
      REQUIRE(e.is_object());
      CHECK(e.contains("type"));
    }
    const auto got = summary(events);
    const std::vector<std::string> prefix = {"kev:starting", "switch->kev", "kev:ready", "kev:stopping",
                                             "kev:stopped", "laya:starting", "switch->laya", "laya:ready"};
    REQUIRE(got.size() >= prefix.size());
    CHECK(std::vector<std::string>(got.begin(), got.begin() + prefix.size()) == prefix);
    if (first.empty()) first = got;
    CHECK(got == first);  // every subscriber sees the same stream
    const auto sw = std::find_if(events.begin(), events.end(), [](const json& e) { return e["type"] == "switch"; });
    REQUIRE(sw != events.end());
    CHECK((*sw)["phases_ms"].contains("total"));
    CHECK(std::any_of(events.begin(), events.end(), [](const json& e) {
      return e["type"] == "request" && e["model"] == "kev" && e["status"] == 200;
    }));  // the status page's per-call records
    CHECK(body.find("\nid: ") != std::string::npos);
  }
}

TEST_CASE("GET /events sends keep-alive comments while nothing happens", "[http]") {
  DoorOptions o;
  o.events_keepalive = 100ms;
  Door door(o);
  RawClient c(door.port());
  c.send(kGetEvents);
  const auto raw = c.read_until(": keep-alive\n\n", 10s, 2);
  CHECK(count_of(raw, ": keep-alive\n\n") >= 2);
}

TEST_CASE("GET /events drops a subscriber that falls too far behind, the door keeps serving", "[http]") {
  DoorOptions o;
  o.events_buffer = 1;  // a switch publishes two events at once: past this at the first switch
  Door door(o);
  RawClient c(door.port());
  c.send(kGetEvents);
  REQUIRE(c.read_until("retry: ").find("retry: ") != std::string::npos);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  CHECK(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya")).status == 200);
  const auto raw = c.read_until("\r\n0\r\n\r\n");  // the stream's last chunk
  CHECK(raw.find(": dropped: too slow") != std::string::npos);
  CHECK(raw.size() >= 5);
  CHECK(raw.substr(raw.size() - 5) == "0\r\n\r\n");
}

TEST_CASE("two GPUs: /status lists the devices and each profile's gpus, /metrics and /events name them", "[http]") {
  DoorOptions o;
  o.two_gpus = true;
  Door door(o);
  RawClient sub(door.port());
  sub.send(kGetEvents);
  REQUIRE(sub.read_until("retry: ").find("retry: ") != std::string::npos);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("laya")).status == 200);
  const auto status = http_request(door.port(), "GET", "/status").json_body();
  INFO(status.dump());
  CHECK(status["devices"] == json::array({{{"index", 0}, {"name", "sim0"}, {"vram_mib", 6144}},
                                          {{"index", 1}, {"name", "sim1"}, {"vram_mib", 8192}}}));
  for (const auto& p : status["profiles"]) CHECK(p["gpus"] == json::array({p["name"] == "kev" ? 0 : 1}));
  CHECK(status["resident"].size() == 2);  // one per device: laya did not evict kev
  const auto metrics = http_request(door.port(), "GET", "/metrics").body;
  CHECK(metrics.find("kevlaya_model_state{model=\"laya\",state=\"ready\",gpu=\"1\"} 1") != std::string::npos);
  CHECK(metrics.find("kevlaya_gpu_memory_bytes{gpu=\"1\",name=\"sim1\"} 8589934592") != std::string::npos);
  const auto events = data_events(dechunk(sub.read_until("\"to\":\"ready\"", 10s, 2)));
  bool laya_gpu = false;
  for (const auto& e : events) {
    if (e["type"] == "phase" && e["child"] == "laya") laya_gpu = e["gpus"] == json::array({1});
  }
  CHECK(laya_gpu);
}
