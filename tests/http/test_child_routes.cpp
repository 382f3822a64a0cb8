// The door-side checks of the llama-server routes it forwards after judging them (issue 46):
// slot file names that cannot leave the child's slot folder, the CORS proxy's flag, the routes
// and their guard, and the merge of the children's own metrics under a model label.
#include <catch2/catch.hpp>

#include "http/child_routes.hpp"
#include "http/gate.hpp"

// A named namespace: its using-directives stay in this file in the unity build (KEVLAYA_UNITY).
namespace child_routes_test {

using namespace kevlaya::http;
using boost::beast::http::verb;

TEST_CASE("slot actions: a filename with a separator, '..', NUL or over 255 bytes is refused", "[http]") {
  CHECK(safe_slot_filename("kev-slot0.bin"));
  CHECK(safe_slot_filename(std::string(255, 'a')));
  CHECK_FALSE(safe_slot_filename(std::string(256, 'a')));
  CHECK_FALSE(safe_slot_filename(""));
  CHECK_FALSE(safe_slot_filename("../kevlaya.yaml"));
  CHECK_FALSE(safe_slot_filename(".."));
  CHECK_FALSE(safe_slot_filename("a..b"));
  CHECK_FALSE(safe_slot_filename("sub/file.bin"));
  CHECK_FALSE(safe_slot_filename("/etc/passwd"));
  CHECK_FALSE(safe_slot_filename("a\\b"));
  CHECK_FALSE(safe_slot_filename(std::string("a\0b", 3)));
}

TEST_CASE("slot actions: the slot id is decimal digits only, so the child's path cannot be steered", "[http]") {
  CHECK(valid_slot_id("0"));
  CHECK(valid_slot_id("12"));
  CHECK_FALSE(valid_slot_id(""));
  CHECK_FALSE(valid_slot_id("-1"));
  CHECK_FALSE(valid_slot_id("0/../props"));
  CHECK_FALSE(valid_slot_id("1234567890"));
}

TEST_CASE("slot actions and the CORS proxy are routed, and slot actions need an admin key", "[http]") {
  const auto slot = match_route("/slots/0");
  CHECK(slot.route == Route::slot_action);
  CHECK(slot.arg == "0");
  CHECK(slot.method == verb::post);
  CHECK(is_admin(slot, verb::post));
  CHECK(match_route("/slots").route == Route::model_api);  // GET /slots: the pass-through table
  const auto proxy = match_route("/cors-proxy");
  CHECK(proxy.route == Route::cors_proxy);
  CHECK(proxy.get_or_post);
  CHECK_FALSE(is_admin(proxy, verb::get));
  CHECK(allow_of(proxy) == "GET, POST, OPTIONS");
}

TEST_CASE("cors proxy: on only when the child's arguments turn it on, the last flag deciding", "[http]") {
  CHECK_FALSE(enables_cors_proxy({}));
  CHECK(enables_cors_proxy({"--ui-mcp-proxy"}));
  CHECK(enables_cors_proxy({"--jinja", "--webui-mcp-proxy"}));
  CHECK_FALSE(enables_cors_proxy({"--ui-mcp-proxy", "--no-ui-mcp-proxy"}));
  CHECK(enables_cors_proxy({"--no-webui-mcp-proxy", "--ui-mcp-proxy"}));
}

TEST_CASE("child metrics: every sample gets its model label and each family is written once", "[http]") {
  const std::string kev =
      "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
      "# TYPE llamacpp:prompt_tokens_total counter\n"
      "llamacpp:prompt_tokens_total 12\n"
      "# HELP llamacpp:requests_processing Number of requests processing.\n"
      "# TYPE llamacpp:requests_processing gauge\n"
      "llamacpp:requests_processing{slot=\"0\"} 1\n";
  const std::string laya =
      "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\r\n"
      "# TYPE llamacpp:prompt_tokens_total counter\r\n"
      "llamacpp:prompt_tokens_total 7\r\n"
      "# HELP other_family not llama-server's\n"
      "other_family 1\n";
  const auto out = merge_child_metrics({{"kev", kev}, {"la\"ya", laya}});
  CHECK(out ==
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\n"
        "llamacpp:prompt_tokens_total{model=\"kev\"} 12\n"
        "llamacpp:prompt_tokens_total{model=\"la\\\"ya\"} 7\n"
        "# HELP llamacpp:requests_processing Number of requests processing.\n"
        "# TYPE llamacpp:requests_processing gauge\n"
        "llamacpp:requests_processing{model=\"kev\",slot=\"0\"} 1\n");
  CHECK(merge_child_metrics({}).empty());
}

TEST_CASE("child metrics: a histogram's _bucket, _sum and _count stay in their family", "[http]") {
  const std::string text =
      "# TYPE llamacpp:wait_seconds histogram\n"
      "llamacpp:wait_seconds_bucket{le=\"+Inf\"} 2\n"
      "llamacpp:wait_seconds_sum 0.5\n"
      "llamacpp:wait_seconds_count 2\n";
  CHECK(merge_child_metrics({{"kev", text}, {"laya", text}}) ==
        "# TYPE llamacpp:wait_seconds histogram\n"
        "llamacpp:wait_seconds_bucket{model=\"kev\",le=\"+Inf\"} 2\n"
        "llamacpp:wait_seconds_sum{model=\"kev\"} 0.5\n"
        "llamacpp:wait_seconds_count{model=\"kev\"} 2\n"
        "llamacpp:wait_seconds_bucket{model=\"laya\",le=\"+Inf\"} 2\n"
        "llamacpp:wait_seconds_sum{model=\"laya\"} 0.5\n"
        "llamacpp:wait_seconds_count{model=\"laya\"} 2\n");
}

}  // namespace child_routes_test
