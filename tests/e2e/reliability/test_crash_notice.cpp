// Issue 14 item 5: a child that crashes after one answer used to stay "ready" for ~300 ms, and
// requests released to it meanwhile got 502 "connection refused". Now a refused/reset connection
// from a ready child whose process is gone marks it crashed at once: the in-flight request gets
// one clear child_crashed, queued and new ones wait for the restart.
#include <catch2/catch.hpp>

#include <signal.h>

#include <future>
#include <regex>

#include <nlohmann/json.hpp>

#include "harness.hpp"

using namespace kevlaya::test;
using nlohmann::json;

TEST_CASE("crash noticed at once: a child that crashes after each answer costs each in-flight request one child_crashed, "
          "never a connection refused",
          "[reliability]") {
  TempDir dir("crash-notice");
  const auto cfg = write_config(dir, {{"kev", {"--fake-crash-after", "1"}, ""}},
                                "queue: {max_depth: 64, max_wait_s: 120}\n");
  const auto prof = dir / "profiles/kev.yaml";
  // Restarts as fast as the crashes come: no crash-loop cooldown, a short backoff window.
  auto yaml = std::regex_replace(read_text(prof), std::regex("max_restarts: 3"), "max_restarts: 1000");
  yaml = std::regex_replace(yaml, std::regex("parallel: 2"), "parallel: 1");  // one answer, then a crash
  write_text(prof, std::regex_replace(yaml, std::regex("window_s: 60"), "window_s: 1"));
  Serve serve(cfg);
  constexpr int kClients = 10, kEach = 3;
  std::vector<std::future<std::vector<HttpReply>>> clients;
  for (int c = 0; c < kClients; ++c)
    clients.push_back(std::async(std::launch::async, [&] {
      std::vector<HttpReply> out;
      for (int i = 0; i < kEach; ++i) out.push_back(chat(serve.port(), "kev", false, 150s));
      return out;
    }));
  int ok = 0, crashed = 0;
  for (auto& f : clients) {
    for (const auto& r : f.get()) {
      INFO("status " << r.status << " body " << r.body);
      CHECK_FALSE(r.timed_out);
      CHECK(r.body.find("connection refused") == std::string::npos);
      if (r.status == 200) {
        ++ok;
        continue;
      }
      CHECK(r.status == 502);
      const auto j = json::parse(r.body, nullptr, false);
      CHECK(j.is_object());
      if (j.is_object()) CHECK(j["error"]["code"] == "child_crashed");
      ++crashed;
    }
  }
  const auto st = json::parse(http_get(serve.port(), "/status").body, nullptr, false);
  REQUIRE(st.is_object());
  const int crashes = st["profiles"][0]["crashes"].get<int>();
  INFO("ok " << ok << " child_crashed " << crashed << " crashes " << crashes);
  CHECK(ok >= 1);
  CHECK(crashes >= 1);
  CHECK(crashed <= crashes);  // parallel: 1 — at most the one request in flight at each crash
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
