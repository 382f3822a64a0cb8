// The page-cache figures of status pages (warm/page_cache.hpp, resident_pct_cached): a call over
// thousands of model files measures at most its budget, and a recent figure is reused.
#include <catch2/catch.hpp>

#include <filesystem>

#include "support/paths.hpp"
#include "warm/page_cache.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

TEST_CASE("page cache: a status call over 1,000 model files measures at most its budget") {
  test::TempDir dir("residency-budget");
  test::write_text(dir / "model.gguf", std::string(8192, 'x'));
  for (int i = 0; i < 1000; ++i) fs::create_hard_link(dir / "model.gguf", dir / ("m" + std::to_string(i) + ".gguf"));
  std::size_t fresh = warm::kResidencyFreshPerCall;
  std::size_t measured = 0;
  for (int i = 0; i < 1000; ++i)
    if (warm::resident_pct_cached(dir / ("m" + std::to_string(i) + ".gguf"), fresh)) ++measured;
  CHECK(measured == warm::kResidencyFreshPerCall);
  CHECK(fresh == 0);
  // The next call measures the next files; those measured already keep their figure.
  fresh = warm::kResidencyFreshPerCall;
  measured = 0;
  for (int i = 0; i < 1000; ++i)
    if (warm::resident_pct_cached(dir / ("m" + std::to_string(i) + ".gguf"), fresh)) ++measured;
  CHECK(measured == 2 * warm::kResidencyFreshPerCall);
}

TEST_CASE("page cache: a figure younger than the maximum age is reused, not measured again") {
  test::TempDir dir("residency-reuse");
  const auto file = dir / "model.gguf";
  test::write_text(file, std::string(8192, 'x'));
  std::size_t fresh = 1;
  const auto first = warm::resident_pct_cached(file, fresh);
  REQUIRE(first);
  CHECK(*first >= 0);
  CHECK(fresh == 0);
  fs::remove(file);  // measuring now would say -1 (unreadable)
  fresh = 1;
  const auto again = warm::resident_pct_cached(file, fresh);
  REQUIRE(again);
  CHECK(*again == *first);
  CHECK(fresh == 1);  // nothing was measured
}

TEST_CASE("page cache: an unreadable file is measured as -1, as resident_pct says") {
  test::TempDir dir("residency-missing");
  std::size_t fresh = 1;
  const auto pct = warm::resident_pct_cached(dir / "nope.gguf", fresh);
  REQUIRE(pct);
  CHECK(*pct == -1.0);
}
