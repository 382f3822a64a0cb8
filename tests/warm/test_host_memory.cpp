// Host memory: MemAvailable capped by the cgroup's memory limit (a container's --memory).
#include <catch2/catch.hpp>

#include <fstream>

#include "support/paths.hpp"
#include "warm/host_memory.hpp"

using namespace kevlaya;
using kevlaya::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A v2 cgroup directory: memory.max, memory.current, memory.stat with inactive_file.
void v2(const fs::path& dir, const std::string& max, std::uint64_t current, std::uint64_t inactive) {
  write(dir / "memory.max", max + "\n");
  write(dir / "memory.current", std::to_string(current) + "\n");
  write(dir / "memory.stat", "anon 1\nfile 2\ninactive_file " + std::to_string(inactive) + "\nactive_file 3\n");
}

}  // namespace

TEST_CASE("cgroup headroom: the limit less the working set (usage less inactive file pages)", "[warm]") {
  CHECK(warm::cgroup_headroom("8589934592\n", std::to_string(3 * 1024 * MiB), "inactive_file " + std::to_string(1024 * MiB)) ==
        8589934592ULL - 2 * 1024 * MiB);
  CHECK(warm::cgroup_headroom(std::to_string(1024 * MiB), std::to_string(2048 * MiB), "inactive_file 0\n") == 0u);
  CHECK_FALSE(warm::cgroup_headroom("max\n", "123", "").has_value());
  CHECK_FALSE(warm::cgroup_headroom("9223372036854771712\n", "123", "").has_value());  // v1 "no limit"
  CHECK_FALSE(warm::cgroup_headroom("", "123", "").has_value());
  // v1's hierarchical total wins over the cgroup's own line.
  CHECK(warm::cgroup_headroom(std::to_string(4096 * MiB), std::to_string(2048 * MiB),
                              "inactive_file 0\ntotal_inactive_file " + std::to_string(1024 * MiB) + "\n") ==
        3072 * MiB);
}

TEST_CASE("cgroup v2: the tightest limit of the cgroup and its ancestors binds", "[warm]") {
  TempDir root("cgroup-v2");
  v2(root.path(), "max", 50 * 1024 * MiB, 0);
  v2(root.path() / "user.slice", std::to_string(6144 * MiB), 2048 * MiB, 1024 * MiB);  // 5 GiB left
  v2(root.path() / "user.slice" / "app.scope", "max", 1024 * MiB, 0);
  CHECK(warm::cgroup_headroom_bytes("0::/user.slice/app.scope\n", root.path()) == 5120 * MiB);
  v2(root.path() / "user.slice" / "app.scope", std::to_string(2048 * MiB), 1024 * MiB, 0);  // 1 GiB left
  CHECK(warm::cgroup_headroom_bytes("0::/user.slice/app.scope\n", root.path()) == 1024 * MiB);
}

TEST_CASE("cgroup v2 in a container: a path missing under the root reads the root's limit", "[warm]") {
  TempDir root("cgroup-ns");
  v2(root.path(), std::to_string(8192 * MiB), 3072 * MiB, 1024 * MiB);
  CHECK(warm::cgroup_headroom_bytes("0::/docker/0123abcd\n", root.path()) == 6144 * MiB);
  CHECK(warm::cgroup_headroom_bytes("0::/\n", root.path()) == 6144 * MiB);
}

TEST_CASE("cgroup v1: the memory controller's hierarchical limit, and no limit gives no cap", "[warm]") {
  TempDir root("cgroup-v1");
  const auto dir = root.path() / "memory" / "docker" / "abc";
  write(dir / "memory.limit_in_bytes", "9223372036854771712\n");
  write(dir / "memory.usage_in_bytes", std::to_string(3072 * MiB) + "\n");
  write(dir / "memory.stat", "inactive_file 5\nhierarchical_memory_limit " + std::to_string(4096 * MiB) +
                                 "\ntotal_inactive_file " + std::to_string(1024 * MiB) + "\n");
  const std::string self = "9:name=systemd:/\n4:memory:/docker/abc\n3:cpuset:/\n0::/\n";
  CHECK(warm::cgroup_headroom_bytes(self, root.path()) == 2048 * MiB);
  write(dir / "memory.stat", "hierarchical_memory_limit 9223372036854771712\ntotal_inactive_file 0\n");
  CHECK_FALSE(warm::cgroup_headroom_bytes(self, root.path()).has_value());
}

TEST_CASE("mem_available_mib reads /proc/meminfo, capped by this process's cgroup", "[warm]") {
  auto m = warm::mem_available_mib();
  REQUIRE(m.has_value());
  CHECK(*m > 0);
}
