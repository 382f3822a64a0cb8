// `kevlaya-orch logs PROFILE [-f] [-n N]`: the child's captured log, across spdlog's rotated files,
// followed through a rotation; clear errors for unknown profiles and missing logs.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>

#include "harness.hpp"

using namespace kevlaya::test;

namespace {

std::string logs_cmd(const TempDir& dir, const std::string& args) {
  return orch_binary().string() + " logs " + args + " --config " + (dir / "kevlaya.yaml").string();
}

std::string numbered(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST_CASE("logs prints the last N lines across the rotated files, oldest first", "[logs]") {
  TempDir dir("logs-tail");
  write_config(dir, {{"kev", {}, "alias: [k]\n"}});
  write_text(dir / "logs/kev.2.log", numbered(1, 3));
  write_text(dir / "logs/kev.1.log", numbered(4, 6));
  write_text(dir / "logs/kev.log", numbered(7, 8));

  auto r = run_command(logs_cmd(dir, "kev -n 4"));
  CHECK(r.exit_code == 0);
  CHECK(r.output == numbered(5, 8));
  auto all = run_command(logs_cmd(dir, "k -n 100"));  // an alias names the same log
  CHECK(all.exit_code == 0);
  CHECK(all.output == numbered(1, 8));
}

TEST_CASE("logs explains a profile that has no log yet and an unknown profile", "[logs]") {
  TempDir dir("logs-missing");
  write_config(dir, {{"kev", {}, ""}});
  auto none = run_command(logs_cmd(dir, "kev"));
  CHECK(none.exit_code == 1);
  CHECK(none.output.find("no log for 'kev'") != std::string::npos);
  auto unknown = run_command(logs_cmd(dir, "nope"));
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("unknown profile 'nope'; profiles: kev") != std::string::npos);
}

TEST_CASE("logs refuses file-name tricks in PROFILE (path traversal)", "[logs][security]") {
  TempDir dir("logs-traversal");
  write_config(dir, {{"kev", {}, ""}});
  write_text(dir / "secret.log", "TOP-SECRET-CONTENT\n");
  write_text(dir / "logs/kev.log", "ok\n");
  for (const std::string name : {"../secret", "..", "kev/../../secret", "/etc/passwd", "kev.log"}) {
    INFO(name);
    auto r = run_command(logs_cmd(dir, "'" + name + "'"));
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("TOP-SECRET-CONTENT") == std::string::npos);
    CHECK(r.output.find("unknown profile") != std::string::npos);
  }
}

TEST_CASE("logs -f prints appended lines and follows a rotation", "[logs]") {
  TempDir dir("logs-follow");
  write_config(dir, {{"kev", {}, ""}});
  write_text(dir / "logs/kev.log", "before\n");
  Proc follow({orch_binary().string(), "logs", "kev", "-f", "-n", "5", "--config",
               (dir / "kevlaya.yaml").string()},
              dir / "follow.out");
  REQUIRE_FALSE(follow.wait_for(std::regex("before\n"), 10s).empty());
  {
    std::ofstream out(dir / "logs/kev.log", std::ios::app);
    out << "appended\n";
  }
  REQUIRE_FALSE(follow.wait_for(std::regex("appended\n"), 10s).empty());
  // What spdlog's rotating sink does: rename the full file, start a new one.
  std::filesystem::rename(dir / "logs/kev.log", dir / "logs/kev.1.log");
  write_text(dir / "logs/kev.log", "after rotation\n");
  REQUIRE_FALSE(follow.wait_for(std::regex("after rotation\n"), 10s).empty());
  CHECK(follow.log() == "before\nappended\nafter rotation\n");
  CHECK(follow.running());
  CHECK(follow.signal_and_wait(SIGTERM) == 128 + SIGTERM);
}
