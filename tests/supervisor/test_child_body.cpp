// The fields a child's request body gets from its lease (supervisor/child_body.hpp): one rule for
// the door and the pipeline executor.
#include <catch2/catch.hpp>

#include "supervisor/child_body.hpp"

using kevlaya::supervisor::child_model;
using kevlaya::supervisor::set_child_fields;

// Issue 35: the door renamed an alias to the profile's name for a local child, the pipeline only
// for a remote one (a stage naming an alias sent the alias). Both now ask child_model.
TEST_CASE("child body: a request is renamed only when it names something other than what the child's server knows") {
  CHECK(child_model("decider", "kev") == "kev");          // an alias of a local profile
  CHECK(child_model("kev", "kev").empty());               // already the name: the body stays byte for byte
  CHECK(child_model("", "kev").empty());                  // no model sent (one profile): none added
  CHECK(child_model("big", "org/big") == "org/big");      // a remote's own name for the profile
  CHECK(child_model("big", "").empty());                  // a command server: as the caller wrote it
}

TEST_CASE("child body: the model and the adapter scales go into the body, its other members keep their order") {
  auto body = nlohmann::ordered_json::parse(R"({"z":1,"model":"decider","a":2})");
  set_child_fields(body, child_model("decider", "kev"), {{0, 0.0}, {1, 0.5}});
  CHECK(body.dump() == R"({"z":1,"model":"kev","a":2,"lora":[{"id":0,"scale":0.0},{"id":1,"scale":0.5}]})");
}
