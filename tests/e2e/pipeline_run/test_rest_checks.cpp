// A pipeline run's body is checked the same way before it is queued, sync or async (before: an
// async `{"input": 5}` got a 202 and failed later), strictly (a NUL after the document is refused),
// and `run --input-file` reads only a regular file, bounded.
#include <catch2/catch.hpp>

#include <signal.h>

#include "e2e/pipeline_run/fixture.hpp"
#include "support/http_client.hpp"
#include "support/proc_probes.hpp"
#include "support/process.hpp"

using nlohmann::json;
using namespace kevlaya::test;

TEST_CASE("pipeline runs over REST: a bad task is a 400 before any 202, sync and async alike") {
  RunProject p(json::array({{{"model", "kev"}, {"reply", "retry"}}}));
  Serve serve(p.dir / "kevlaya.yaml");
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port()) + "/v1/pipelines/dv/runs";
  const auto post = [&](const std::string& query, const std::string& file) {
    return run_command("curl -sS -o " + (p.dir / "out.json").string() + " -w '%{http_code}' --max-time 60 " +
                       "-H 'Content-Type: application/json' --data-binary @" + (p.dir / file).string() + " '" + base +
                       query + "'");
  };
  write_text(p.dir / "bad.json", R"({"input": 5})");
  for (const std::string q : {"", "?async=1"}) {
    INFO("query " << q);
    const auto r = post(q, "bad.json");
    CHECK(r.output == "400");
    const auto body = json::parse(read_text(p.dir / "out.json"), nullptr, false);
    INFO(body.dump());
    CHECK(body["error"]["message"].get<std::string>().find("input") != std::string::npos);
  }
  write_text(p.dir / "nul.json", std::string("{\"input\": \"x\"}\0garbage", 22));
  for (const std::string q : {"", "?async=1"}) CHECK(post(q, "nul.json").output == "400");
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("run --input-file: a device, a FIFO or a folder is refused at once with a clear error") {
  RunProject p(json::array({{{"model", "kev"}, {"reply", "retry"}}}));
  REQUIRE(run_command("mkfifo " + (p.dir / "tasks.fifo").string()).exit_code == 0);
  for (const std::string& f : {std::string("/dev/zero"), (p.dir / "tasks.fifo").string(), p.dir.path().string()}) {
    INFO(f);
    const auto r = p.run("--input-file " + f);  // before: /dev/zero grew to GBs, a FIFO hung
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("not a regular file") != std::string::npos);
  }
}

// The door waited for a sync run's end without watching its client: one that hung up stayed in
// CLOSE-WAIT until the run ended (up to queue.max_wait_s).
TEST_CASE("pipeline runs over REST: a client that hangs up while its sync run waits leaves no socket in CLOSE-WAIT") {
  RunProject p(json::array({{{"model", "kev"}, {"reply", "retry"}}}), {{"kev", "--fake-load-ms 8000"}});
  Serve serve(p.dir / "kevlaya.yaml");
  const int port = serve.port();
  RawClient client(port);
  client.send(post("/v1/pipelines/dv/runs", json{{"input", "disk full"}, {"candidates", {"cache", "retry"}}}.dump()));
  const auto kev_starting = [&] {
    const auto status = http_request(port, "GET", "/status", "", {}, 5s).json_body();
    for (const auto& prof : status.value("profiles", json::array()))
      if (prof.value("name", "") == "kev") return prof.value("state", "") == "starting";
    return false;
  };
  REQUIRE(eventually(kev_starting, 5s));  // the run waits for kev's 8 s start
  client.close();
  CHECK(eventually([&] { return close_wait_on(port) == 0; }, 2s));
}
