// KV slot persistence through ProcessEffects against the stand-in (which follows llama-server's
// /slots/N?action=save|restore contract) and, when configured, the real llama-server.
#include <catch2/catch.hpp>

#include <fstream>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "warm/slot_cache.hpp"
#include "warm/warm_support.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using kevlaya::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int kPromptWords = 300;

struct Rig {
  explicit Rig(const std::string& tag, const std::string& binary = test::standin_binary().string())
      : dir(tag), cfg{test::warm_orch(dir.path(), false), {}, {}}, fx(ioc, std::make_shared<const config::Config>(cfg)) {
    profile = test::warm_profile("kev", binary, test::tiny_llama());
  }
  fs::path slot_file() const {
    return warm::slot_dir(dir / "state", profile.name) / warm::slot_file_name(warm::slot_key(profile).value(), 0);
  }
  TempDir dir;
  asio::io_context ioc;
  config::Config cfg;
  ProcessEffects fx;
  config::Profile profile;
};

}  // namespace

TEST_CASE("slot cache: saved on stop, restored on the next start, the shared prefix is not re-processed", "[warm]") {
  Rig r("warm-slot-roundtrip");
  const auto prompt = test::long_prompt(kPromptWords);
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  CHECK(out.report->slots_restored == 0);  // nothing saved yet
  const int cold = test::prompt_n(r.ioc, out.report->endpoint, prompt);
  REQUIRE(cold >= kPromptWords);
  auto rep = test::stop(r.ioc, r.fx, "kev");
  CHECK(rep.slots_saved == 1);
  CHECK(fs::file_size(r.slot_file()) > 0);

  auto again = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(again.ok());
  CHECK(again.report->slots_restored == 1);
  const int warm = test::prompt_n(r.ioc, again.report->endpoint, prompt);
  CHECK(warm >= 0);
  CHECK(warm < cold / 10);
  test::stop(r.ioc, r.fx, "kev");
}

TEST_CASE("slot cache: a changed ctx or cache type never restores the old file", "[warm]") {
  Rig r("warm-slot-mismatch");
  const auto prompt = test::long_prompt(kPromptWords);
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  REQUIRE(test::prompt_n(r.ioc, out.report->endpoint, prompt) >= kPromptWords);
  REQUIRE(test::stop(r.ioc, r.fx, "kev").slots_saved == 1);
  auto changed = r.profile;
  SECTION("ctx") { changed.ctx = 1024; }
  SECTION("cache type") { changed.cache_type_k = "q8_0"; }
  auto again = test::start(r.ioc, r.fx, changed);
  REQUIRE(again.ok());
  CHECK(again.report->slots_restored == 0);
  CHECK(test::prompt_n(r.ioc, again.report->endpoint, prompt) >= kPromptWords);
  test::stop(r.ioc, r.fx, "kev");
  CHECK(fs::exists(r.slot_file()));  // the old setup's file stays until evicted
}

TEST_CASE("slot cache: a corrupt slot file fails the restore and the child still serves, cold", "[warm]") {
  Rig r("warm-slot-corrupt");
  fs::create_directories(r.slot_file().parent_path());
  std::ofstream(r.slot_file()) << "not a slot file";
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  CHECK(out.report->slots_restored == 0);
  CHECK(test::prompt_n(r.ioc, out.report->endpoint, test::long_prompt(50)) >= 50);
  test::stop(r.ioc, r.fx, "kev");
}

TEST_CASE("slot cache: an empty slot saves nothing and leaves no partial file", "[warm]") {
  Rig r("warm-slot-empty");
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  auto rep = test::stop(r.ioc, r.fx, "kev");
  CHECK(rep.slots_saved == 0);
  CHECK(fs::is_empty(r.slot_file().parent_path()));
}

TEST_CASE("slot cache: over max_bytes the oldest files are evicted, the new one kept", "[warm]") {
  Rig r("warm-slot-cap");
  r.profile.slot_cache.max_bytes = (60 << 10) + 100;  // the old file fits, the two together do not
  const auto dir = r.slot_file().parent_path();
  fs::create_directories(dir);
  std::ofstream(dir / "0000000000000000-slot0.bin") << std::string(60 << 10, 'o');
  fs::last_write_time(dir / "0000000000000000-slot0.bin", fs::file_time_type::clock::now() - std::chrono::hours(1));
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  REQUIRE(test::prompt_n(r.ioc, out.report->endpoint, test::long_prompt(kPromptWords)) >= kPromptWords);
  CHECK(test::stop(r.ioc, r.fx, "kev").slots_saved == 1);
  CHECK(fs::exists(r.slot_file()));
  CHECK_FALSE(fs::exists(dir / "0000000000000000-slot0.bin"));
}

TEST_CASE("slot cache: disabled profiles get no --slot-save-path and save nothing", "[warm]") {
  Rig r("warm-slot-off");
  r.profile.slot_cache.enabled = false;
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  REQUIRE(test::prompt_n(r.ioc, out.report->endpoint, test::long_prompt(20)) >= 20);
  auto rep = test::stop(r.ioc, r.fx, "kev");
  CHECK(rep.slots_saved == 0);
  CHECK(rep.save_ms == 0);
  CHECK_FALSE(fs::exists(r.dir / "state" / "slots"));
}

TEST_CASE("slot cache: real llama-server saves and restores a slot of the stories-shaped model", "[warm][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(bin);
  Rig r("warm-slot-real", bin);
  // The tiny vocabulary has letters and letter pairs: 150 words make several hundred tokens.
  const auto prompt = test::long_prompt(150, "story");
  auto out = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(out.ok());
  const int cold = test::prompt_n(r.ioc, out.report->endpoint, prompt);
  REQUIRE(cold > 100);
  auto rep = test::stop(r.ioc, r.fx, "kev");
  CHECK(rep.slots_saved == 1);
  auto again = test::start(r.ioc, r.fx, r.profile);
  REQUIRE(again.ok());
  CHECK(again.report->slots_restored == 1);
  const int warm = test::prompt_n(r.ioc, again.report->endpoint, prompt);
  CHECK(warm >= 0);
  CHECK(warm < cold / 10);
  test::stop(r.ioc, r.fx, "kev");
}
