// The demo pipeline on the real llama-server ($KEVLAYA_LLAMA_SERVER) with the tiny random-weight
// models: the choices grammar and the JSON schema must keep every answer valid.
#include <catch2/catch.hpp>

#include "e2e/pipeline_run/fixture.hpp"

using nlohmann::json;
using namespace kevlaya::test;

TEST_CASE("the demo pipeline runs on the real llama-server with tiny models") {
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  RunProject p(json::array(), {}, read_text(source_dir() / "pipelines/decide-verify.yaml"), server);
  write_text(p.dir / "tasks.jsonl", read_text(source_dir() / "tools/demo/tasks.jsonl"));
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("server binary: kev -> " + server) != std::string::npos);
  const auto recs = p.journal("out.jsonl");
  REQUIRE(recs.size() == 5);
  const std::set<std::string> choices = {"cache", "retry", "escalate", "abort"};
  for (const auto& rec : recs) {
    CHECK((rec["verdict"] == "accepted" || rec["verdict"] == "rejected"));
    CHECK(choices.count(rec["decision"].get<std::string>()) == 1);
    for (const auto& a : rec["attempts"]) {
      CHECK(a["valid"] == true);
      CHECK(a["timings"].contains("predicted_ms"));  // real llama-server timings are journaled
    }
  }
}
