#include "http/bodies.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/bounded_json.hpp"
#include "common/bytes.hpp"
#include "common/json_scan.hpp"
#include "supervisor/child_body.hpp"

namespace kevlaya::http {

Result<ModelCall> parse_model_call(const config::ConfigPtr& cfg, std::string_view text) {
  // Validated without building a tree (the body is forwarded as sent): common/json_scan.hpp.
  auto scan = scan_json(text);
  if (!scan) return make_error(Errc::bad_request, "request body: " + scan.error().message);
  if (!scan->object) return make_error(Errc::bad_request, "request body is not a JSON object");
  ModelCall call;
  std::string_view model, keep_alive;  // the last of a repeated key wins, as in a parsed object
  for (const auto& m : scan->members) {
    if (m.key == "model") model = m.value;
    else if (m.key == "stream") call.stream = m.value == "true";
    else if (m.key == "keep_alive") keep_alive = m.value;
  }
  call.model_null = model == "null";
  if (!model.empty() && !call.model_null) {  // null is absent, as llama-server reads it
    if (model.front() != '"') return make_error(Errc::bad_request, "\"model\" must be a string");
    call.requested = json_string(model);
  }
  auto profile = cfg->resolve_model(call.requested);
  if (!profile) return profile.error();
  call.cfg = cfg;
  call.prof = *profile;
  if (!keep_alive.empty()) {
    call.keep_alive_field = true;
    auto keep = parse_keep_alive(nlohmann::json::parse(keep_alive));  // one value, bounded by the scan
    if (!keep) return keep.error();
    call.keep_alive_s = *keep;
  }
  return call;
}

namespace {

using nlohmann::json;

// One Go duration ("1h30m", "-2.5s", "500ms") or a bare number of seconds, in seconds.
std::optional<double> duration_seconds(const std::string& s) {
  static const std::pair<const char*, double> kUnits[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                                          {"s", 1},     {"m", 60},    {"h", 3600}};
  std::size_t i = s.rfind('-', 0) == 0 ? 1 : 0;
  const double sign = i == 1 ? -1 : 1;
  if (i == s.size() || s.size() > 64) return std::nullopt;
  double total = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    // The whole number must parse: "." and "1.2.3" are refused, not read as 0 and 1.2.
    double n = 0;
    const char* end = s.data() + i;
    if (const auto r = std::from_chars(s.data() + start, end, n); r.ec != std::errc() || r.ptr != end) return std::nullopt;
    const std::size_t unit = i;
    while (i < s.size() && !((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    const auto u = s.substr(unit, i - unit);
    if (u.empty() && unit == s.size() && start == (sign < 0 ? 1U : 0U)) return sign * n;  // bare number
    const auto* f = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& k) { return u == k.first; });
    if (f == std::end(kUnits)) return std::nullopt;
    total += n * f->second;
  }
  return sign * total;
}

}  // namespace

Result<std::optional<std::int64_t>> parse_keep_alive(const json& v) {
  if (v.is_null()) return std::optional<std::int64_t>{};
  std::optional<double> secs;
  if (v.is_number()) secs = v.get<double>();
  else if (v.is_string()) secs = duration_seconds(v.get<std::string>());
  if (!secs || !std::isfinite(*secs))
    return make_error(Errc::bad_request, "\"keep_alive\" must be a number of seconds or a duration such as \"5m\"");
  if (*secs < 0) return std::optional<std::int64_t>{-1};
  constexpr double kMax = 1e12;  // beyond any cap; keeps the cast defined
  return std::optional<std::int64_t>{static_cast<std::int64_t>(std::ceil(std::min(*secs, kMax)))};
}

std::string child_body(const ModelCall& call, std::string raw, const std::string& profile,
                       const std::vector<ledger::LoraScale>& lora) {
  // A null `model` is named for the child: not every server reads null as absent.
  const std::string model = call.model_null ? profile : supervisor::child_model(call.requested, profile);
  if (lora.empty() && model.empty() && !call.keep_alive_field) return raw;
  // Built only to be rewritten; `raw` was checked already (parse_model_call, or a translation's dump).
  auto parsed = parse_ordered_json_bounded(raw);  // in the caller's member order
  if (!parsed || !parsed->is_object()) return raw;
  nlohmann::ordered_json b = std::move(parsed.value());
  b.erase("keep_alive");
  supervisor::set_child_fields(b, model, lora);
  return dump_json(b);
}

namespace {

// The speeds and token counts of the `timings` object at the start of `text`, read from the scan
// (common/json_scan.hpp): no tree, no copy per key or value; nullopt if it is cut off or malformed.
// A speed that is not a number is left out; the last of a repeated key wins.
std::optional<Timings> speeds_at(std::string_view text) {
  auto scan = scan_json_prefix(text);
  if (!scan || !scan->object) return std::nullopt;
  Timings t;
  for (const auto& m : scan->members) {
    auto* slot = m.key == "predicted_per_second" ? &t.predicted_per_second
                 : m.key == "prompt_per_second"  ? &t.prompt_per_second
                 : m.key == "prompt_n"           ? &t.prompt_n
                 : m.key == "predicted_n"        ? &t.predicted_n
                 : m.key == "cache_n"            ? &t.cache_n
                                                 : nullptr;
    if (!slot) continue;
    double v = 0;
    const char* end = m.value.data() + m.value.size();
    if (const auto r = std::from_chars(m.value.data(), end, v); r.ec == std::errc() && r.ptr == end) *slot = v;
  }
  return t;
}

}  // namespace

// A `"timings"` inside a string value is escaped (\"timings\") and never matches; a "timings"
// that is a value, not a key, is skipped.
std::optional<Timings> timings_of(std::string_view text) {
  static constexpr std::string_view kKey = "\"timings\"";
  static constexpr std::string_view kSpace = " \t\r\n";
  auto key = text.rfind(kKey);
  while (key != std::string_view::npos) {
    auto at = text.find_first_not_of(kSpace, key + kKey.size());
    if (at != std::string_view::npos && text[at] == ':') at = text.find_first_not_of(kSpace, at + 1);
    else at = std::string_view::npos;
    if (at != std::string_view::npos && text[at] == '{') return speeds_at(text.substr(at));
    key = key == 0 ? std::string_view::npos : text.rfind(kKey, key - 1);
  }
  return std::nullopt;
}

namespace {

const char* kind_name(JsonKind k) {
  switch (k) {
    case JsonKind::string: return "a string";
    case JsonKind::boolean: return "true or false";
    case JsonKind::number: return "a number";
    case JsonKind::integer: return "an integer";
    case JsonKind::object: return "an object";
    case JsonKind::array: return "an array";
  }
  return "a value";
}

bool is_kind(const json& v, JsonKind k) {
  switch (k) {
    case JsonKind::string: return v.is_string();
    case JsonKind::boolean: return v.is_boolean();
    case JsonKind::number: return v.is_number();
    case JsonKind::integer: return v.is_number_integer();
    case JsonKind::object: return v.is_object();
    case JsonKind::array: return v.is_array();
  }
  return false;
}

}  // namespace

Result<const json*> typed_field(const json& obj, std::string_view key, JsonKind kind, std::string_view where) {
  if (!obj.is_object()) return static_cast<const json*>(nullptr);
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return static_cast<const json*>(nullptr);
  if (is_kind(*it, kind)) return &*it;
  const std::string name = where.empty() ? std::string(key) : std::string(where) + "." + std::string(key);
  return make_error(Errc::bad_request, "\"" + name + "\" must be " + kind_name(kind) + ", not " + it->type_name());
}

Result<json> parse_run_body(std::string_view text) {
  auto task = parse_json_bounded(text);  // depth-limited: the runner re-serializes it
  if (!task) return make_error(Errc::bad_request, "request body: " + task.error().message);
  if (!task->is_object() || !task->contains("input"))
    return make_error(Errc::bad_request, "body must be a JSON object with \"input\" (and optional \"candidates\")");
  return task;
}

}  // namespace kevlaya::http
