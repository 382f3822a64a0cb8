// `check PATH` reads PATH only through the bounded reader (common/bounded_file.hpp): a FIFO, a
// device or an oversized file is refused at once with that reader's message, never waited on nor
// read whole. Each command runs under `timeout` so a regression fails instead of hanging the suite.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "support/paths.hpp"

using namespace kevlaya::test;

namespace {

// `kevlaya-orch check ARG` in `d`, killed after 20 s (exit 124) so a hang fails the test.
CmdResult check_in(const TempDir& d, const std::string& arg, double& seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_command("cd '" + d.path().string() + "' && timeout 20 " + orch_binary().string() + " check " + arg +
                       " </dev/null");
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

TEST_CASE("cli check: a FIFO is refused at once, not waited on", "[cli]") {
  TempDir d("cli-fifo");
  const auto fifo = d / "kevlaya.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  double s = 0;
  const auto r = check_in(d, "kevlaya.yaml", s);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("a FIFO, not a regular file") != std::string::npos);
  CHECK(s < 10.0);
}

TEST_CASE("cli check: a file over the 1 MiB limit is refused without being read whole", "[cli]") {
  TempDir d("cli-big");
  SECTION("2 MiB of YAML") {
    std::ofstream(d / "big.yaml") << "a: " << std::string(2u << 20, 'x') << "\n";
    double s = 0;
    const auto r = check_in(d, "big.yaml", s);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("2097156 bytes, more than the 1048576-byte limit for a configuration file") !=
          std::string::npos);
  }
  SECTION("a sparse 64 GiB file: reading it whole would never finish") {
    {
      std::ofstream(d / "huge.yaml") << "a: 1\n";
    }
    REQUIRE(::truncate((d / "huge.yaml").c_str(), 64LL << 30) == 0);
    double s = 0;
    const auto r = check_in(d, "huge.yaml", s);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("68719476736 bytes, more than the 1048576-byte limit") != std::string::npos);
    CHECK(s < 10.0);
  }
}

TEST_CASE("cli check: a character device is refused, not read forever", "[cli]") {
  TempDir d("cli-dev");
  double s = 0;
  const auto r = check_in(d, "/dev/zero", s);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("a character device, not a regular file") != std::string::npos);
  CHECK(s < 10.0);
}
