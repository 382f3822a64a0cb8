// The door as a drop-in for llama-server (issue 46): how a request's `model` resolves (one
// function for every API), the default waiting-requests bound, and the hints `check` gives for
// llama-server flags the door replaces.
#include <catch2/catch.hpp>

#include "config/fixture.hpp"

using namespace kevlaya::test;

namespace {

cfg::Profile named(const std::string& name, std::vector<std::string> alias = {}) {
  cfg::Profile p;
  p.name = name;
  p.alias = std::move(alias);
  return p;
}

cfg::Config with(std::vector<cfg::Profile> profiles, std::string default_model = {}) {
  cfg::Config c;
  c.profiles = std::move(profiles);
  c.orch.default_model = std::move(default_model);
  return c;
}

}  // namespace

TEST_CASE("resolve_model: one profile takes a missing or unknown name, as a one-model llama-server does",
          "[config]") {
  const auto c = with({named("kev")});
  for (const char* name : {"", "gpt-3.5-turbo", "codellama70b", "kev", "kev:latest"}) {
    INFO(name);
    auto r = c.resolve_model(name);
    REQUIRE(r.ok());
    CHECK((*r)->name == "kev");
  }
}

TEST_CASE("resolve_model: several profiles without a default keep 404 listing the known ones, 400 for none",
          "[config]") {
  const auto c = with({named("kev", {"k"}), named("laya")});
  CHECK((*c.resolve_model("k"))->name == "kev");
  CHECK((*c.resolve_model("laya:latest"))->name == "laya");
  auto unknown = c.resolve_model("gpt-4");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == kevlaya::Errc::not_found);
  CHECK(unknown.error().message == "unknown model 'gpt-4'; known models: kev, k (alias of kev), laya");
  auto missing = c.resolve_model("");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == kevlaya::Errc::bad_request);
  CHECK(missing.error().hint.find("default_model") != std::string::npos);
}

TEST_CASE("resolve_model: default_model takes a missing or unknown name, a known one still wins", "[config]") {
  const auto c = with({named("kev", {"k"}), named("laya")}, "k");  // an alias names the default too
  CHECK((*c.resolve_model(""))->name == "kev");
  CHECK((*c.resolve_model("gpt-3.5-turbo"))->name == "kev");
  CHECK((*c.resolve_model("laya"))->name == "laya");
}

TEST_CASE("queue.max_depth defaults to Ollama's 512 waiting model calls", "[config]") {
  CHECK(cfg::QueueCfg{}.max_depth == 512);
  TempDir d("cfg-queue");
  const auto r = cfg::load(minimal_tree(d, "profiles_dir: profiles\n"));
  INFO(dump(r));
  REQUIRE(r.ok());
  CHECK(r.config.orch.queue.max_depth == 512);
}

TEST_CASE("check: --api-key in extra_args names the door's api_keys", "[config]") {
  TempDir dir("cfg-apikey");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\nextra_args: [--api-key, s3cret]\n");
  const auto r = cfg::load_profile_file(f);
  const auto all = dump(r);
  INFO(all);
  CHECK_FALSE(r.ok());
  CHECK(all.find("extra_args sets '--api-key', which kevlaya-orch chooses for each spawn; to require a key "
                 "from clients set api_keys (or api_keys_file, api_keys_env) in kevlaya.yaml") != std::string::npos);
}

TEST_CASE("check: --slot-save-path in extra_args names slot_cache.enabled and where the door keeps slots",
          "[config]") {
  TempDir dir("cfg-slots");
  const auto f = write_profile(dir, "kev.yaml", "name: kev\nmodel: m.gguf\nextra_args: [--slot-save-path, /tmp/x]\n");
  const auto r = cfg::load_profile_file(f);
  const auto all = dump(r);
  INFO(all);
  CHECK_FALSE(r.ok());
  CHECK(all.find("use the profile's slot_cache.enabled instead (the door keeps the slot files under "
                 "state_dir/slots/NAME)") != std::string::npos);
}

TEST_CASE("default_model: read from kevlaya.yaml, and one naming no profile is an error", "[config]") {
  TempDir d("cfg-default-model");
  const auto good = cfg::load(minimal_tree(d, "profiles_dir: profiles\ndefault_model: kev\n"));
  INFO(dump(good));
  REQUIRE(good.ok());
  CHECK(good.config.orch.default_model == "kev");
  TempDir e("cfg-default-model-bad");
  const auto bad = cfg::load(minimal_tree(e, "profiles_dir: profiles\ndefault_model: kevv\n"));
  INFO(dump(bad));
  CHECK_FALSE(bad.ok());
  CHECK(dump(bad).find("default_model names unknown model 'kevv' (did you mean 'kev'?)") != std::string::npos);
}
