// common/bounded_file.hpp's read_file_tail: a child's log read from its spawn offset, bounded.
#include <catch2/catch.hpp>

#include <fstream>

#include "common/bounded_file.hpp"
#include "support/paths.hpp"

using namespace kevlaya;

TEST_CASE("read_file_tail reads from the offset, keeps the last max_bytes, restarts after a rotation", "[bytes]") {
  test::TempDir d("file-tail");
  const auto f = d / "child.log";
  std::ofstream(f, std::ios::binary) << "0123456789";
  CHECK(read_file_tail(f, 0, 100) == "0123456789");
  CHECK(read_file_tail(f, 4, 100) == "456789");
  CHECK(read_file_tail(f, 4, 3) == "789");   // the cap wins over the offset
  CHECK(read_file_tail(f, 50, 100) == "0123456789");  // offset past the end: the log was rotated
  CHECK(read_file_tail(f, 10, 100).empty());
  CHECK(read_file_tail(d / "missing.log", 0, 100).empty());
}
