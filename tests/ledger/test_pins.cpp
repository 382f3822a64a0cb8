// Pins in the residency plan (docs/lifecycle.md): a pin is a member of every allowed set, and a
// profile that cannot fit beside the pins is refused with the figures.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "ledger/plan.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;

namespace {

constexpr std::uint64_t kPinsOverhead = 450 * kMiB;
using Sets = std::vector<std::vector<std::string>>;

ProfileInput small(const std::string& name, bool pin = false) {
  ProfileInput p;
  p.name = name;
  p.model = test::q4ks_3b_info();
  p.output_tied = true;
  p.flags.ctx = 2048;
  p.shared_base = false;  // separate children (same model file in this fixture)
  p.pin = pin;
  return p;
}

std::uint64_t pins_alone(const ProfileInput& p) {
  return estimate(p.model, p.output_tied, p.flags, p.adapters, kPinsOverhead).total_gpu();
}

bool pin_error(const Plan& p, const std::string& subject) {
  for (const auto& d : p.diagnostics)
    if (d.pin && d.severity == config::Severity::error && d.subject == subject) return true;
  return false;
}

}  // namespace

TEST_CASE("plan pins: a pin that fits beside each rotating profile is in every allowed set") {
  const auto one = pins_alone(small("x"));
  const PlanOptions opt{2 * one + one / 2, kPinsOverhead, config::Residency::auto_};  // two fit, three do not
  const auto plan = make_plan({small("pin", true), small("kev"), small("laya")}, opt);
  CHECK(plan.ok());
  CHECK(plan.allowed_sets == Sets{{"pin", "kev"}, {"pin", "laya"}});
}

// Regression: under `residency: rotate` a pin kept every profile that fit beside it resident (the
// search took the largest sets); rotate means one at a time beside the pins, as without a GPU.
TEST_CASE("plan pins: under rotate the others take turns one at a time beside the pin, even with room for more") {
  const auto one = pins_alone(small("x"));
  const PlanOptions roomy{4 * one, kPinsOverhead, config::Residency::rotate};  // all three would fit
  const auto plan = make_plan({small("pin", true), small("kev"), small("laya")}, roomy);
  CHECK(plan.ok());
  CHECK(plan.allowed_sets == Sets{{"pin", "kev"}, {"pin", "laya"}});
  auto largest = roomy;
  largest.residency = config::Residency::auto_;  // auto: everything fits, so everything stays
  CHECK(make_plan({small("pin", true), small("kev"), small("laya")}, largest).allowed_sets ==
        Sets{{"pin", "kev", "laya"}});
}

TEST_CASE("plan pins: a profile that cannot fit beside the pin is refused with the figures") {
  const auto one = pins_alone(small("x"));
  const PlanOptions opt{one + one / 2, kPinsOverhead, config::Residency::auto_};  // one at a time
  const auto plan = make_plan({small("pin", true), small("kev")}, opt);
  CHECK_FALSE(plan.ok());
  CHECK(pin_error(plan, "kev"));
  bool sentence = false;
  for (const auto& d : plan.diagnostics)
    sentence |= d.message.find("does not fit beside the pinned pin") != std::string::npos;
  CHECK(sentence);
}

TEST_CASE("plan pins: pins that do not fit together are refused") {
  const auto one = pins_alone(small("x"));
  const PlanOptions opt{one + one / 2, kPinsOverhead, config::Residency::rotate};
  const auto plan = make_plan({small("a", true), small("b", true), small("c")}, opt);
  CHECK_FALSE(plan.ok());
  CHECK(pin_error(plan, "a+b"));
}

TEST_CASE("plan pins: everything co-resident needs no pin sets") {
  const auto one = pins_alone(small("x"));
  const PlanOptions opt{4 * one, kPinsOverhead, config::Residency::auto_};
  const auto plan = make_plan({small("pin", true), small("kev")}, opt);
  CHECK(plan.ok());
  CHECK(plan.allowed_sets == Sets{{"pin", "kev"}});
}
