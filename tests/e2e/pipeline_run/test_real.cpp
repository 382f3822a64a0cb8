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

TEST_CASE("a verify schema's property order reaches the real llama-server's grammar and the journal") {
  // llama-server's grammar writes properties in the order the schema lists them; `verdict` before
  // `reason` is not the alphabetical order, so a schema sorted anywhere on the way would show here.
  KEVLAYA_REAL_SERVER_OR_SKIP(server);
  std::string pipeline = read_text(source_dir() / "pipelines/decide-verify.yaml");
  const std::string reason_first =
      "          reason:\n            type: string\n            maxLength: 120   # the grammar stops the reason "
      "here, so the JSON always closes\n          verdict:\n            type: string\n            enum: [pass, reject]\n";
  const std::string verdict_first =
      "          verdict:\n            type: string\n            enum: [pass, reject]\n          reason:\n"
      "            type: string\n            maxLength: 120\n";
  const auto at = pipeline.find(reason_first);
  REQUIRE(at != std::string::npos);
  pipeline.replace(at, reason_first.size(), verdict_first);
  RunProject p(json::array(), {}, pipeline, server);
  write_text(p.dir / "tasks.jsonl", read_text(source_dir() / "tools/demo/tasks.jsonl"));
  auto r = p.run("--input-file tasks.jsonl --output out.jsonl");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  int verified = 0;
  for (const auto& rec : p.journal("out.jsonl")) {
    for (const auto& a : rec["attempts"]) {
      if (a["stage"] != "verify" || !a.contains("output")) continue;
      const auto out = a["output"].get<std::string>();
      INFO(out);
      CHECK(out.find("\"verdict\"") < out.find("\"reason\""));
      ++verified;
    }
  }
  CHECK(verified >= 5);
}
