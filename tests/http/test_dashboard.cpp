// The per-model histograms of /metrics (time to first token, queue wait, decode speed) and the
// Grafana dashboard in tools/grafana/, whose every query must name a metric the door exports.
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "door_fixture.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

std::set<std::string> exported_families(const std::string& exposition) {
  std::set<std::string> names;
  const std::regex type_line("^# TYPE (\\S+) (\\S+)$");
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) names.insert(m[1]);
  }
  return names;
}

// A query's metric name without the suffix Prometheus adds to a histogram's series.
std::string family_of(std::string name) {
  for (const std::string suffix : {"_bucket", "_sum", "_count"})
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  return name;
}

}  // namespace

TEST_CASE("each model call feeds the per-model histograms of queue wait and time to first token", "[http][metrics]") {
  Door door;
  REQUIRE(http_request(door.port(), "POST", "/v1/chat/completions", chat_body("kev")).status == 200);
  std::string text;  // the call's figures are noted after its answer is out
  eventually([&] {
    text = http_request(door.port(), "GET", "/metrics").body;
    return text.find("kevlaya_queue_wait_seconds_count{model=\"kev\"} 1") != std::string::npos;
  });
  CHECK(text.find("kevlaya_queue_wait_seconds_count{model=\"kev\"} 1") != std::string::npos);
  CHECK(text.find("kevlaya_time_to_first_token_seconds_count{model=\"kev\"} 1") != std::string::npos);
  CHECK(text.find("kevlaya_generation_tokens_per_second_count{model=\"kev\"} 1") != std::string::npos);
  CHECK(text.find("# TYPE kevlaya_time_to_first_token_seconds histogram") != std::string::npos);
  if (run_command("command -v promtool").exit_code == 0) {
    TempDir dir("metrics-promtool");
    write_text(dir / "metrics.txt", text);
    auto lint = run_command("promtool check metrics < " + (dir / "metrics.txt").string());
    INFO(lint.output);
    CHECK(lint.exit_code == 0);
  } else {
    WARN("promtool is not installed: the exposition was not linted");
  }
}

TEST_CASE("every query of the Grafana dashboard names a metric the door exports", "[http][metrics]") {
  Door door;
  const auto families = exported_families(http_request(door.port(), "GET", "/metrics").body);
  REQUIRE(families.count("kevlaya_queue_wait_seconds") == 1);  // described before any call
  const auto dash = json::parse(read_text(source_dir() / "tools/grafana/kevlaya-dashboard.json"));
  const std::regex metric("kevlaya_[a-z_]+");
  int queries = 0;
  for (const auto& panel : dash["panels"])
    for (const auto& target : panel["targets"]) {
      const auto expr = target["expr"].get<std::string>();
      ++queries;
      int named = 0;
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it, ++named) {
        INFO(panel["title"] << ": " << expr);
        CHECK(families.count(family_of(it->str())) == 1);
      }
      INFO(expr);
      CHECK(named > 0);
    }
  CHECK(queries >= 10);
}
