// State records (supervisor/state_file.hpp) for profiles of any name: a name too long for a file
// name (a 245-character model file name) still gets its record, found and reaped by name.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "supervisor/state_file.hpp"

using namespace kevlaya;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("state file: a 245-character profile name still gets its record, with the whole name inside") {
  test::TempDir dir("state-long-name");
  const std::string name(245, 'm');
  // A pid no process has (above pid_max's default ceiling): reaping must only remove the record.
  const supervisor::ChildRecord rec(4194000, 4194000, 12345, name, {"/bin/llama-server", "-m", "/m/x.gguf"});
  const auto st = supervisor::write_state(dir.path(), rec);
  INFO((st ? std::string() : st.error().message));
  REQUIRE(st);
  const auto files = files_in(dir.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().size() <= 255);
  std::ifstream in(files[0]);
  const auto j = nlohmann::json::parse(in);
  CHECK(j.at("profile") == name);
  CHECK(supervisor::reap_stale(dir.path()) == 0);  // the pid runs nothing of ours: nothing killed
  CHECK(files_in(dir.path()).empty());             // but the record was recognised and removed
}

TEST_CASE("state file: two long names that share a prefix get two records") {
  test::TempDir dir("state-long-names");
  const std::string a(245, 'm'), b = std::string(244, 'm') + "n";
  REQUIRE(supervisor::write_state(dir.path(), supervisor::ChildRecord(4194001, 4194001, 1, a, {"x"})));
  REQUIRE(supervisor::write_state(dir.path(), supervisor::ChildRecord(4194001, 4194001, 1, b, {"x"})));
  CHECK(files_in(dir.path()).size() == 2);
  supervisor::remove_state(dir.path(), supervisor::ChildRecord(4194001, 4194001, 1, a, {"x"}));
  CHECK(files_in(dir.path()).size() == 1);
}
