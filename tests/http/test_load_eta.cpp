// Load ETA at the door (docs/lifecycle.md, "Load ETA"): a starting child's /status load_progress
// carries eta_s, the median of its last loads less the time this one has taken.
#include <catch2/catch.hpp>

#include <future>

#include "door_fixture.hpp"
#include "support/process.hpp"

using namespace kevlaya::test;

namespace {

json kev_status(std::uint16_t port) {
  for (const auto& p : http_request(port, "GET", "/status").json_body().value("profiles", json::array()))
    if (p.value("name", "") == "kev") return p;
  return json::object();
}

}  // namespace

TEST_CASE("a starting child's /status shows eta_s from its last loads (none before the first)", "[http]") {
  DoorOptions o;
  o.load_ms = 600;
  Door door(o);
  const auto port = door.port();
  json first;
  auto load = std::async(std::launch::async, [&] { return http_request(port, "POST", "/admin/load/kev").status; });
  REQUIRE(eventually([&] { return (first = kev_status(port)).value("state", "") == "starting"; }));
  CHECK((first["load_progress"].is_null() || first["load_progress"].value("eta_s", json()).is_null()));
  REQUIRE(load.get() == 200);
  for (int i = 0; i < 2; ++i) {  // two more loads: three in all, 600 ms each
    REQUIRE(http_request(port, "POST", "/admin/unload/kev").status == 200);
    REQUIRE(http_request(port, "POST", "/admin/load/kev").status == 200);
  }
  REQUIRE(http_request(port, "POST", "/admin/unload/kev").status == 200);
  json during;
  load = std::async(std::launch::async, [&] { return http_request(port, "POST", "/admin/load/kev").status; });
  REQUIRE(eventually([&] { return (during = kev_status(port)).value("state", "") == "starting"; }));
  INFO(during.dump());
  const auto eta = during["load_progress"].value("eta_s", json());
  REQUIRE(eta.is_number());
  CHECK(eta.get<double>() <= 0.6);
  CHECK(eta.get<double>() >= 0.2);  // the median is ~0.6 s and this load has just begun
  REQUIRE(load.get() == 200);
}
