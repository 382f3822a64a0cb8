// What the client commands print: the status table, one line per event, SSE splitting.
#include <catch2/catch.hpp>

#include <regex>

#include "cli/client_format.hpp"
#include "cli/http_client.hpp"

using namespace kevlaya::cli;
using nlohmann::json;

TEST_CASE("client: the status table shows each model's state, idle unload, pin and loading") {
  const auto st = json::parse(R"({
    "profiles":[
      {"name":"kev","state":"ready","pid":4242,"in_flight":1,"queued":0,"pinned":true,"idle_unload_in_s":null},
      {"name":"laya","state":"starting","pid":77,"in_flight":0,"queued":2,"pinned":false,"idle_unload_in_s":null,
       "load_progress":{"stage":"loading tensors","pct":40}},
      {"name":"big","state":"ready","pid":5,"in_flight":0,"queued":0,"pinned":false,"idle_unload_in_s":12.3}],
    "queue":{"supervisor_queued":2,"max_depth":64},"in_flight_requests":1,"resident":["kev"],
    "recent_switches":[{"from":"","to":"kev","ok":true,"phases_ms":{"total":412}}]})");
  const auto t = status_table(st);
  INFO(t);
  CHECK(std::regex_search(t, std::regex("kev +ready +4242 +1 +0 +- +yes")));
  CHECK(std::regex_search(t, std::regex("laya +starting +77 +0 +2 +- +no +loading tensors 40%")));
  CHECK(std::regex_search(t, std::regex("big +ready +5 +0 +0 +13s")));
  CHECK(t.find("resident: kev") != std::string::npos);
  CHECK(std::regex_search(t, std::regex("\\(none\\) +kev +yes +412")));
}

TEST_CASE("client: one line per event, by type") {
  CHECK(event_line(json::parse(R"({"type":"unload","model":"kev","reason":"idle","stop_ms":85})"))
            .find("unload kev (idle) in 85 ms") != std::string::npos);
  CHECK(event_line(json::parse(R"({"type":"phase","child":"kev","from":"ready","to":"draining"})"))
            .find("phase kev ready -> draining") != std::string::npos);
  CHECK(event_line(json::parse(R"({"type":"switch","from":"kev","to":"laya","ok":true,"phases_ms":{"total":7}})"))
            .find("switch kev -> laya ok 7 ms") != std::string::npos);
  CHECK(event_line(json::parse(R"({"type":"reload","changed":["laya"],"added":[],"removed":["old"]})"))
            .find("reload changed: laya; added: none; removed: old") != std::string::npos);
}

TEST_CASE("client: SSE frames split across reads give whole payloads, comments are skipped") {
  SseSplitter s;
  CHECK(s.feed("retry: 2000\n\nid: 1\ndata: {\"a\"").empty());
  const auto got = s.feed(":1}\n\n: keep-alive\n\nid: 2\r\ndata: x\r\n\r\n");
  CHECK(got == std::vector<std::string>{"{\"a\":1}", "x"});
}

TEST_CASE("client: door URLs") {
  auto u = parse_door_url("http://127.0.0.1:8181");
  REQUIRE(u.ok());
  CHECK(u->host == "127.0.0.1");
  CHECK(u->port == "8181");
  auto v = parse_door_url("localhost:9/kev/");
  REQUIRE(v.ok());
  CHECK(v->prefix == "/kev");
  CHECK(v->text == "http://localhost:9/kev");
  auto six = parse_door_url("http://[::1]:8080");
  REQUIRE(six.ok());
  CHECK(six->host == "::1");
  CHECK_FALSE(parse_door_url("https://x:1").ok());
  CHECK_FALSE(parse_door_url("not a url").ok());
  CHECK_FALSE(parse_door_url("http://127.0.0.1:70000").ok());  // no port past 65535
}

TEST_CASE("client: the door's error body becomes one sentence") {
  HttpAnswer a{404, R"({"error":{"message":"unknown model 'x'","hint":"known: kev"}})"};
  CHECK(error_text(a) == "unknown model 'x' (known: kev)");
  HttpAnswer raw{502, "bad gateway"};
  CHECK(error_text(raw) == "HTTP 502: bad gateway");
}
