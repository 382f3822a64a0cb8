// The request bodies the door reads, apart from the network so they can be tested and fuzzed:
// a model call's body (model resolution, alias rewrite) and a pipeline run's body. Every body is
// parsed with the JSON depth limit (common/bounded_json.hpp) before anything walks it.
#pragma once
#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ledger/plan.hpp"

namespace kevlaya::http {

struct ModelCall {
  std::string requested;  // `model` as sent ("" when absent or null)
  bool model_null = false;  // sent as `"model": null`: the child gets the profile's name instead
  // The profile it names, resolved once in the door's configuration of that moment, which the call
  // holds (and keeps alive) until it ends: a reload meanwhile does not change what it reads.
  config::ConfigPtr cfg;
  const config::Profile* prof = nullptr;
  const std::string& profile() const { return prof->name; }
  bool stream = false;
  bool keep_alive_field = false;  // the body has `keep_alive` (removed before the child sees it)
  // `keep_alive` (Ollama-style, docs/lifecycle.md) in seconds; negative = as long as allowed.
  std::optional<std::int64_t> keep_alive_s;
};

// Ollama's keep_alive: a number of seconds, or a string of seconds or a Go duration ("5m",
// "1h30m", "500ms", "-1"); negative = keep loaded. Sub-second values round up to 1 s (0 stays
// 0). nullopt for null. Errors: 400 naming the field.
Result<std::optional<std::int64_t>> parse_keep_alive(const nlohmann::json& v);

// Parses a model call's body: a JSON object whose `model` (absent or null = none) is resolved by
// Config::resolve_model; the call keeps `cfg` (its `prof` points into it). Errors: 400 (not JSON,
// too deep, `model` not a string), 404 (unknown model).
Result<ModelCall> parse_model_call(const config::ConfigPtr& cfg, std::string_view body);

// The body for the child: `raw` byte for byte unless `model` must name `profile` (an alias was
// sent; "" = never renamed), shared-base mode adds the adapters' scales (`lora`) or a `keep_alive`
// is removed (it is the door's, not the child's). `raw` by value: an unchanged body is handed on, not copied.
std::string child_body(const ModelCall& call, std::string raw, const std::string& profile,
                       const std::vector<ledger::LoraScale>& lora);

// The speeds llama-server reports (tokens/s) in its `"timings"` object; a field absent or not a number is empty.
struct Timings {
  std::optional<double> predicted_per_second, prompt_per_second;
  std::optional<double> prompt_n, predicted_n, cache_n;  // tokens: prompt evaluated, generated, from cache
};
// The last `"timings":{...}` object in a llama-server answer or a stream's tail, read alone (the
// answer itself is relayed as bytes, and the object is not built: a SAX pass picks the two speeds);
// nullopt when absent or malformed. Metrics and the request record.
std::optional<Timings> timings_of(std::string_view text);

// The JSON types a body's field may be required to have.
enum class JsonKind { string, boolean, number, integer, object, array };

// One field of a request body read with its type checked: nullptr when absent or null, the value
// when of `kind`, else 400 naming it ("\"messages[2].role\" must be a string"; `where` is the
// path of `obj`, "" at the top). The door's body readers go through this instead of nlohmann's
// value()/get(), which throw on a wrong type (and a throw is a 500).
Result<const nlohmann::json*> typed_field(const nlohmann::json& obj, std::string_view key, JsonKind kind,
                                          std::string_view where = {});

// Parses a pipeline run's body: a JSON object with "input". Errors: 400.
Result<nlohmann::json> parse_run_body(std::string_view body);

}  // namespace kevlaya::http
