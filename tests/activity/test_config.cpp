// The activity: and capture: sections of kevlaya.yaml (docs/configuration.md).
#include <catch2/catch.hpp>

#include "config/config.hpp"
#include "support/paths.hpp"

using namespace kevlaya;

namespace {

config::LoadResult load_with(const test::TempDir& d, const std::string& orch_yaml) {
  test::write_text(d / "models/kev.gguf", "x");
  test::write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../models/kev.gguf\n");
  test::write_text(d / "kevlaya.yaml", orch_yaml);
  return config::load(d / "kevlaya.yaml");
}

std::string diagnostics(const config::LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.format() + "\n";
  return s;
}

}  // namespace

TEST_CASE("the history and captures are on and off by default", "[activity][config]") {
  test::TempDir d("activity-cfg-default");
  const auto r = load_with(d, "listen: {port: 8181}\n");
  REQUIRE(r.ok());
  const auto& o = r.config.orch;
  CHECK(o.activity.enabled);
  CHECK(o.activity.max_records == 100000);
  CHECK(o.activity.max_age_days == 30);
  CHECK(o.activity.session_headers == std::vector<std::string>{"X-Session-ID"});
  CHECK_FALSE(o.capture.enabled);
  CHECK(o.capture.max_mib == 64);
}

TEST_CASE("activity: and capture: settings are read", "[activity][config]") {
  test::TempDir d("activity-cfg");
  const auto r = load_with(d, "activity: {enabled: false, max_records: 500, max_age_days: 7, "
                              "session_headers: [X-Agent-Run, X-Session-ID]}\ncapture: {enabled: true, max_mib: 8}\n");
  INFO(diagnostics(r));
  REQUIRE(r.ok());
  const auto& o = r.config.orch;
  CHECK_FALSE(o.activity.enabled);
  CHECK(o.activity.max_records == 500);
  CHECK(o.activity.max_age_days == 7);
  CHECK(o.activity.session_headers == std::vector<std::string>{"X-Agent-Run", "X-Session-ID"});
  CHECK(o.capture.enabled);
  CHECK(o.capture.max_mib == 8);
}

TEST_CASE("a bad activity or capture value is an error naming file:line:col and the key", "[activity][config]") {
  test::TempDir d("activity-cfg-bad");
  const auto r = load_with(d, "listen: {port: 8181}\nactivity: {max_records: lots}\ncapture: {max_mibs: 8}\n");
  CHECK_FALSE(r.ok());
  const auto text = diagnostics(r);
  INFO(text);
  CHECK(text.find("kevlaya.yaml:2:") != std::string::npos);
  CHECK(text.find("activity.max_records") != std::string::npos);
  CHECK(text.find("max_mibs") != std::string::npos);
}
