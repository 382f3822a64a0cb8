// Every file the configuration names is read bounded (docs/security.md, "Files the CLI reads"): a
// regular file only, at most 1 MiB, refused with a clear error otherwise; skipped profile entries
// are named; listen.host is checked by `check` as `serve` binds it.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "fixture.hpp"

using namespace kevlaya::test;

namespace {

bool any_has(const cfg::LoadResult& r, const std::string& needle) {
  const auto all = formatted(r);
  return std::any_of(all.begin(), all.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

}  // namespace

TEST_CASE("bounded inputs: a device, a FIFO or a folder as the configuration is refused at once", "[config]") {
  TempDir d("bounded-config");
  REQUIRE(::mkfifo((d / "kevlaya.fifo").c_str(), 0600) == 0);
  std::filesystem::create_directories(d / "folder.yaml");
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/zero", "a character device"}, {(d / "kevlaya.fifo").string(), "a FIFO"},
           {(d / "folder.yaml").string(), "a directory"}}) {
    INFO(path);
    const auto r = cfg::load(path);  // before: /dev/zero grew to GBs, a FIFO hung
    INFO(dump(r));
    CHECK_FALSE(r.ok());
    CHECK(any_has(r, "error: " + kind + ", not a regular file"));
  }
}

TEST_CASE("bounded inputs: a configuration or key file over 1 MiB is refused, naming the limit", "[config]") {
  TempDir d("bounded-size");
  const std::string big = "# " + std::string(1 << 20, 'x') + "\nprofiles_dir: profiles\n";
  auto f = minimal_tree(d, big);
  auto r = cfg::load(f);
  INFO(dump(r));
  CHECK(any_has(r, std::to_string(big.size()) + " bytes, more than the 1048576-byte limit for a configuration file"));
  write_text(d / "keys.txt", std::string(2 << 20, 'k'));
  ::chmod((d / "keys.txt").c_str(), 0600);
  f = minimal_tree(d, "api_keys_file: keys.txt\n");
  r = cfg::load(f);
  INFO(dump(r));
  CHECK(any_has(r, "api_keys_file: cannot read"));
  CHECK(any_has(r, "more than the 1048576-byte limit for a key file"));
  f = minimal_tree(d, "api_keys_file: /dev/zero\n");  // before: read until memory ran out
  r = cfg::load(f);
  INFO(dump(r));
  CHECK(any_has(r, "api_keys_file: cannot read /dev/zero: a character device, not a regular file"));
}

TEST_CASE("bounded inputs: a dangling link, a FIFO or a folder named *.yaml in profiles_dir is skipped with a warning",
          "[config]") {
  TempDir d("bounded-dir");
  const auto f = minimal_tree(d, "profiles_dir: profiles\n");
  REQUIRE(::symlink((d / "nowhere.yaml").c_str(), (d / "profiles/dangling.yaml").c_str()) == 0);
  REQUIRE(::mkfifo((d / "profiles/pipe.yaml").c_str(), 0600) == 0);
  std::filesystem::create_directories(d / "profiles/dir.yaml");
  const auto r = cfg::load(f);
  INFO(dump(r));
  CHECK(r.ok());  // kev still loads
  CHECK(r.config.profiles.size() == 1);
  const auto where = [&](const char* name) { return cfg::display_path(std::filesystem::absolute(d / "profiles" / name).lexically_normal()); };
  CHECK(has_diag(r, where("dangling.yaml") + ": warning: skipped: a link to nothing, not a regular file"));
  CHECK(has_diag(r, where("pipe.yaml") + ": warning: skipped: a FIFO, not a regular file"));
  CHECK(has_diag(r, where("dir.yaml") + ": warning: skipped: a directory, not a regular file"));
}

TEST_CASE("listen.host: a name or anything but a numeric address is refused by check, at its line", "[config]") {
  TempDir d("listen-host");
  for (const char* bad : {"localhost", "not-an-ip", "127.0.0.1:8080", "256.1.1.1", "::1x"}) {
    INFO(bad);
    const auto f = minimal_tree(d, std::string("listen:\n  host: \"") + bad + "\"\n");
    const auto r = cfg::load(f);
    INFO(dump(r));
    CHECK(has_diag(r, diag(f, 2, 9, std::string("listen.host: '") + bad +
                                          "' is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or a numeric address of "
                                          "this machine; names are not looked up)")));
  }
  for (const char* good : {"127.0.0.1", "0.0.0.0", "::1", "::", "192.168.1.20"}) {
    INFO(good);
    const auto f = minimal_tree(d, std::string("listen:\n  host: \"") + good + "\"\napi_keys: [k]\n");
    const auto r = cfg::load(f);
    INFO(dump(r));
    CHECK(r.ok());
  }
}
