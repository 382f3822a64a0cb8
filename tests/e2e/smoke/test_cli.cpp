#include <catch2/catch.hpp>

#include "support/paths.hpp"

using namespace kevlaya::test;

TEST_CASE("cli --version prints the project version", "[cli]") {
  auto r = run_command(orch_binary().string() + " --version");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("kevlaya-orch " KEVLAYA_VERSION) != std::string::npos);
  // and the allocator it runs on: mimalloc in a Release build, AddressSanitizer's under the sanitizers
  CHECK(r.output.find("\nallocator: ") != std::string::npos);
}

TEST_CASE("cli without a subcommand fails with usage", "[cli]") {
  auto r = run_command(orch_binary().string());
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("subcommand") != std::string::npos);
}
