// The children a configuration runs (ledger/children.hpp): the plan's ChildSpecs bound to its
// profiles, what the supervisor starts as they are.
#include <catch2/catch.hpp>

#include <memory>

#include "config/fingerprint.hpp"
#include "fixtures.hpp"
#include "ledger/children.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;

namespace {

// kev and laya on one base with their own adapters, x alone, r a remote (no child).
config::ConfigPtr four_profiles() {
  config::Config c;
  auto kev = test::member("kev", "/m/base.gguf");
  kev.alias = {"decider"};
  kev.lora = {{"kev-a", "/l/a.gguf", 1.0}};
  auto laya = test::member("laya", "/m/base.gguf");
  laya.lora = {{"laya-b", "/l/b.gguf", 0.5}};
  auto r = test::member("r", "");
  r.backend = config::Backend::remote;
  r.url = "http://127.0.0.1:9";
  c.profiles = {kev, laya, test::member("x", "/m/x.gguf"), r};
  return std::make_shared<const config::Config>(std::move(c));
}

ChildSpec shared_kev_laya() {
  ChildSpec g;
  g.name = "kev+laya";
  g.members = {"kev", "laya"};
  g.adapters = {{"kev-a", "/l/a.gguf", 0, 1.0}, {"laya-b", "/l/b.gguf", 0, 0.5}};
  g.scales = {{"kev", {{0, 1.0}, {1, 0.0}}}, {"laya", {{0, 0.0}, {1, 0.5}}}};
  g.host_beside = 7;
  return g;
}

}  // namespace

TEST_CASE("children: a planned lone child keeps its bill and runs its own profile, not a copy") {
  const auto cfg = four_profiles();
  ChildSpec x;
  x.name = "x";
  x.members = {"x"};
  x.bill.weights_gpu = 123;
  x.host_alone = 456;
  const auto children = bind_children(cfg, {x});
  REQUIRE(children.size() == 3);  // kev, laya alone (no shared child planned), x; the remote has none
  const auto& bound = *children[2];
  CHECK(bound.name == "x");
  CHECK(bound.bill.weights_gpu == 123);
  CHECK(bound.host_alone == 456);
  CHECK(bound.profile.get() == &cfg->profiles[2]);  // a pointer into the configuration
  CHECK(bound.key == config::child_key(cfg->profiles[2]));
  CHECK(children[0]->name == "kev");  // unplanned: alone, unpriced
  CHECK(children[0]->host_alone == 0);
  CHECK(children[0]->profile->lora.size() == 1);
}

TEST_CASE("children: a shared child runs its first member's settings with every adapter at scale 0") {
  const auto cfg = four_profiles();
  const auto children = bind_children(cfg, {shared_kev_laya()});
  REQUIRE(children.size() == 2);  // kev+laya where kev is, then x
  const auto& g = *children[0];
  CHECK(g.name == "kev+laya");
  CHECK(g.members == std::vector<std::string>{"kev", "laya"});
  CHECK(g.host_beside == 7);
  CHECK(g.profile->name == "kev+laya");  // logs and state under the child's name
  CHECK(g.profile->alias.empty());
  REQUIRE(g.profile->lora.size() == 2);
  CHECK(g.profile->lora[0].scale == 0.0);
  CHECK(g.profile->lora[1].path == "/l/b.gguf");
  CHECK(g.profile->lora[1].scale == 0.0);
  CHECK(g.key == config::child_key(*g.profile));
  CHECK(children[1]->name == "x");
}

TEST_CASE("children: a shared child naming a remote or unknown profile is dropped, its members run alone") {
  const auto cfg = four_profiles();
  auto bad = shared_kev_laya();
  bad.name = "kev+r";
  bad.members = {"kev", "r"};
  auto unknown = shared_kev_laya();
  unknown.name = "laya+nobody";
  unknown.members = {"laya", "nobody"};
  const auto children = bind_children(cfg, {bad, unknown});
  REQUIRE(children.size() == 3);
  CHECK(children[0]->name == "kev");
  CHECK(children[1]->name == "laya");
  CHECK(children[1]->scales.empty());
}

TEST_CASE("children: a detached child holds its own profile and frees the configuration") {
  auto cfg = four_profiles();
  const std::weak_ptr<const config::Config> watch = cfg;
  auto children = bind_children(cfg, {});
  const auto own = detach(*children[2]);
  children.clear();
  cfg.reset();
  CHECK(watch.expired());  // nothing but the detached copy survives
  CHECK(own->profile->name == "x");
  CHECK(own->profile->model == "/m/x.gguf");
}

TEST_CASE("children: a placed child runs a copy with its placement, the configuration stays unplaced") {
  const auto cfg = four_profiles();
  ChildSpec x;
  x.name = "x";
  x.members = {"x"};
  x.placement = {{1}, "1", {}, 0};
  const auto children = bind_children(cfg, {x});
  const auto& bound = *children[2];
  CHECK(bound.profile->placement.visible == "1");  // its CUDA_VISIBLE_DEVICES
  CHECK(bound.profile.get() != &cfg->profiles[2]);
  CHECK(cfg->profiles[2].placement.devices.empty());
  CHECK(bound.key != config::child_key(cfg->profiles[2]));  // the devices are part of what it runs
}
