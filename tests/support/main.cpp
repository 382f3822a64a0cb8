// Catch2 runner. A test that calls KEVLAYA_SKIP makes the process exit with 4, which CTest
// (SKIP_RETURN_CODE 4; one process per test case) reports as "Skipped", never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

namespace kevlaya::test {
namespace {
bool g_skipped = false;
}
void mark_skipped() { g_skipped = true; }
}  // namespace kevlaya::test

int main(int argc, char* argv[]) {
  const int rc = Catch::Session().run(argc, argv);
  if (rc == 0 && kevlaya::test::g_skipped) return 4;
  return rc;
}
