// Page-cache residency and the background prefetcher (memory floor, cancellation).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>

#include "support/paths.hpp"
#include "warm/page_cache.hpp"
#include "warm/prefetcher.hpp"

using namespace kevlaya;
using kevlaya::test::TempDir;

namespace {

// A file of `mib` MiB of non-zero bytes on the build tree's (disk-backed) file system.
std::filesystem::path make_file(const TempDir& dir, int mib) {
  auto path = dir / "model.bin";
  std::ofstream out(path, std::ios::binary);
  std::string block(1 << 20, 'k');
  for (int i = 0; i < mib; ++i) out << block;
  out.close();
  ::sync();
  return path;
}

// Drops the file from the cache; false when this file system keeps it anyway (tmpfs).
bool dropped(const std::filesystem::path& p) {
  REQUIRE(warm::drop_from_cache(p).ok());
  return warm::resident_pct(p) < 50.0;
}

warm::PrefetchResult prefetch_and_wait(warm::Prefetcher& pf, std::vector<std::filesystem::path> files) {
  std::promise<warm::PrefetchResult> done;
  auto fut = done.get_future();
  pf.prefetch(std::move(files), [&done](const warm::PrefetchResult& r) { done.set_value(r); });
  return fut.get();
}

}  // namespace

TEST_CASE("residency is low after DONTNEED and full after prefetch", "[warm]") {
  TempDir dir("warm-residency");
  auto f = make_file(dir, 32);
  if (!dropped(f)) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  warm::Prefetcher pf(warm::PrefetchOptions{0, 4ULL << 20, true, [] { return std::optional<std::int64_t>(1 << 20); }});
  auto r = prefetch_and_wait(pf, {f});
  CHECK(r.end == warm::PrefetchEnd::done);
  CHECK(r.bytes_advised == 32ULL << 20);
  auto res = warm::residency(f);
  REQUIRE(res.ok());
  CHECK(res->file_bytes == 32ULL << 20);
  CHECK(res->percent() > 95.0);
}

TEST_CASE("residency of a file over 256 MiB is sampled and tracks the cached share", "[warm]") {
  TempDir dir("warm-residency-big");
  // A sparse 512 MiB file: reading its holes caches zero pages without writing 512 MiB to disk.
  const auto f = dir / "big.bin";
  { std::ofstream create(f); }
  std::filesystem::resize_file(f, 512ULL << 20);
  if (!dropped(f)) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  auto none = warm::residency(f);
  REQUIRE(none.ok());
  CHECK(none->sampled);
  CHECK(none->percent() < 5.0);
  {  // read the first half
    std::ifstream in(f, std::ios::binary);
    std::string buf(1 << 20, '\0');
    for (int i = 0; i < 256; ++i) in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  }
  auto half = warm::residency(f);
  REQUIRE(half.ok());
  CHECK(half->sampled);
  CHECK(half->percent() == Approx(50.0).margin(5.0));
  CHECK(warm::drop_from_cache(f).ok());
}

TEST_CASE("residency of a missing file is an io_error", "[warm]") {
  auto r = warm::residency("/nonexistent/kevlaya/model.gguf");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::io_error);
  CHECK(warm::resident_pct("/nonexistent/kevlaya/model.gguf") < 0);
}

TEST_CASE("prefetch stops at the MemAvailable floor", "[warm]") {
  TempDir dir("warm-floor");
  auto f = make_file(dir, 16);
  if (!dropped(f)) KEVLAYA_SKIP("the build tree's file system ignores POSIX_FADV_DONTNEED");
  SECTION("below the floor from the start: nothing is read") {
    warm::Prefetcher pf({1024, 1ULL << 20, true, [] { return std::optional<std::int64_t>(512); }});
    auto r = prefetch_and_wait(pf, {f});
    CHECK(r.end == warm::PrefetchEnd::memory_floor);
    CHECK(r.bytes_advised == 0);
    CHECK(warm::resident_pct(f) < 50.0);
  }
  SECTION("memory drops while reading: stops part way") {
    std::atomic<int> calls{0};
    // 4 chunks fit above the floor, then MemAvailable falls under it.
    warm::Prefetcher pf({1024, 1ULL << 20, true, [&calls] {
                           return std::optional<std::int64_t>(++calls <= 5 ? 8192 : 1000);
                         }});
    auto r = prefetch_and_wait(pf, {f});
    CHECK(r.end == warm::PrefetchEnd::memory_floor);
    CHECK(r.bytes_advised == 4ULL << 20);
  }
  SECTION("the budget above the floor bounds what is read") {
    warm::Prefetcher pf({1024, 1ULL << 20, true, [] { return std::optional<std::int64_t>(1024 + 3); }});
    auto r = prefetch_and_wait(pf, {f});
    CHECK(r.end == warm::PrefetchEnd::memory_floor);
    CHECK(r.bytes_advised == 3ULL << 20);
  }
}

TEST_CASE("cancel stops a running prefetch after its current chunk", "[warm]") {
  TempDir dir("warm-cancel");
  auto f = make_file(dir, 16);
  std::promise<void> in_first_chunk, go_on;
  auto go = go_on.get_future().share();
  std::atomic<int> calls{0};
  // The memory reader runs once per chunk: it blocks in the second chunk until the test cancelled.
  warm::Prefetcher pf({0, 1ULL << 20, true, [&] {
                         int n = ++calls;
                         if (n == 3) {
                           in_first_chunk.set_value();
                           go.wait();
                         }
                         return std::optional<std::int64_t>(1 << 20);
                       }});
  std::promise<warm::PrefetchResult> done;
  auto fut = done.get_future();
  pf.prefetch({f}, [&done](const warm::PrefetchResult& r) { done.set_value(r); });
  in_first_chunk.get_future().wait();
  pf.cancel();
  go_on.set_value();
  auto r = fut.get();
  CHECK(r.end == warm::PrefetchEnd::cancelled);
  CHECK(r.bytes_advised == 2ULL << 20);
}

TEST_CASE("a newer prefetch supersedes the running one", "[warm]") {
  TempDir dir("warm-supersede");
  auto f = make_file(dir, 8);
  std::promise<void> reached, go_on;
  auto go = go_on.get_future().share();
  std::atomic<int> calls{0};
  warm::Prefetcher pf({0, 1ULL << 20, true, [&] {
                         if (++calls == 2) {
                           reached.set_value();
                           go.wait();
                         }
                         return std::optional<std::int64_t>(1 << 20);
                       }});
  std::vector<warm::PrefetchEnd> ends;
  pf.prefetch({f}, [&](const warm::PrefetchResult& r) { ends.push_back(r.end); });
  reached.get_future().wait();
  pf.prefetch({f}, [&](const warm::PrefetchResult& r) { ends.push_back(r.end); });
  go_on.set_value();
  pf.wait_idle();
  REQUIRE(ends.size() == 2);
  CHECK(ends[0] == warm::PrefetchEnd::cancelled);
  CHECK(ends[1] == warm::PrefetchEnd::done);
}

TEST_CASE("prefetching a missing file ends with an error, not an exception", "[warm]") {
  warm::Prefetcher pf({0, 1ULL << 20, true, {}});
  std::promise<warm::PrefetchResult> done;
  pf.prefetch({"/nonexistent/kevlaya/x.gguf"}, [&](const warm::PrefetchResult& r) { done.set_value(r); });
  auto r = done.get_future().get();
  CHECK(r.end == warm::PrefetchEnd::error);
  CHECK_THAT(r.message, Catch::Contains("cannot open"));
}
