#include "pipeline/schema.hpp"

#include <cmath>
#include <set>

#include "pipeline/text.hpp"

namespace kevlaya::pipeline {
namespace {

using nlohmann::json;
using Violation = std::optional<std::string>;

constexpr std::size_t kMaxShown = 60;

std::string show(const json& v) {
  auto s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > kMaxShown ? s.substr(0, kMaxShown) + "..." : s;
}

bool is_integral(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool type_matches(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") return is_integral(v);
  return false;
}

Violation fail(const std::string& path, const std::string& what) { return path + ": " + what; }

Violation check(const json& v, const json& s, const std::string& path);

Violation check_type(const json& v, const json& s, const std::string& path) {
  if (!s.contains("type")) return std::nullopt;
  const json& t = s["type"];
  std::vector<std::string> types;
  if (t.is_string()) types.push_back(t.get<std::string>());
  else if (t.is_array())
    for (const auto& x : t)
      if (x.is_string()) types.push_back(x.get<std::string>());
  for (const auto& name : types)
    if (type_matches(v, name)) return std::nullopt;
  return fail(path, "expected type " + show(t) + ", got " + show(v));
}

Violation check_values(const json& v, const json& s, const std::string& path) {
  if (s.contains("enum") && s["enum"].is_array()) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) return fail(path, "expected one of " + show(s["enum"]) + ", got " + show(v));
  }
  if (s.contains("const") && s["const"] != v)
    return fail(path, "expected " + show(s["const"]) + ", got " + show(v));
  if (v.is_string()) {
    const auto n = utf8_length(v.get_ref<const std::string&>());
    if (s.contains("minLength") && s["minLength"].is_number() && n < s["minLength"].get<double>())
      return fail(path, "string shorter than minLength " + show(s["minLength"]));
    if (s.contains("maxLength") && s["maxLength"].is_number() && n > s["maxLength"].get<double>())
      return fail(path, "string longer than maxLength " + show(s["maxLength"]));
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (s.contains("minimum") && s["minimum"].is_number() && d < s["minimum"].get<double>())
      return fail(path, show(v) + " is below minimum " + show(s["minimum"]));
    if (s.contains("maximum") && s["maximum"].is_number() && d > s["maximum"].get<double>())
      return fail(path, show(v) + " is above maximum " + show(s["maximum"]));
  }
  return std::nullopt;
}

Violation check_array(const json& v, const json& s, const std::string& path) {
  if (s.contains("minItems") && s["minItems"].is_number() && v.size() < s["minItems"].get<double>())
    return fail(path, "fewer than minItems " + show(s["minItems"]) + " items");
  if (s.contains("maxItems") && s["maxItems"].is_number() && v.size() > s["maxItems"].get<double>())
    return fail(path, "more than maxItems " + show(s["maxItems"]) + " items");
  if (s.contains("items"))
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto bad = check(v[i], s["items"], path + "[" + std::to_string(i) + "]")) return bad;
  return std::nullopt;
}

Violation check_object(const json& v, const json& s, const std::string& path) {
  if (s.contains("required") && s["required"].is_array())
    for (const auto& r : s["required"])
      if (r.is_string() && !v.contains(r.get<std::string>()))
        return fail(path, "missing required field '" + r.get<std::string>() + "'");
  const json empty = json::object();
  const json& props = s.contains("properties") && s["properties"].is_object() ? s["properties"] : empty;
  for (const auto& [key, val] : v.items()) {
    const std::string sub = path + "." + key;
    if (props.contains(key)) {
      if (auto bad = check(val, props[key], sub)) return bad;
    } else if (s.contains("additionalProperties")) {
      const json& ap = s["additionalProperties"];
      if (ap.is_boolean() && !ap.get<bool>()) return fail(path, "unexpected field '" + key + "'");
      if (ap.is_object())
        if (auto bad = check(val, ap, sub)) return bad;
    }
  }
  return std::nullopt;
}

Violation check(const json& v, const json& s, const std::string& path) {
  if (s.is_boolean()) return s.get<bool>() ? std::nullopt : fail(path, "no value is allowed here");
  if (!s.is_object()) return std::nullopt;
  if (auto bad = check_type(v, s, path)) return bad;
  if (auto bad = check_values(v, s, path)) return bad;
  if (v.is_array()) return check_array(v, s, path);
  if (v.is_object()) return check_object(v, s, path);
  return std::nullopt;
}

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> k = {
      "type", "enum", "const", "properties", "required", "additionalProperties", "items",
      "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
      // annotations: no effect on validity
      "title", "description", "default", "examples", "$schema", "$id", "$comment"};
  return k;
}

void collect_unsupported(const json& s, std::set<std::string>& out) {
  if (!s.is_object()) return;
  for (const auto& [key, val] : s.items()) {
    if (!known_keywords().count(key)) out.insert(key);
    if (key == "properties" && val.is_object())
      for (const auto& [name, sub] : val.items()) collect_unsupported(sub, out);
    if (key == "items" || key == "additionalProperties") collect_unsupported(val, out);
  }
}

}  // namespace

std::optional<std::string> validate(const json& value, const json& schema) {
  return check(value, schema, "$");
}

std::vector<std::string> unsupported_keywords(const json& schema) {
  std::set<std::string> out;
  collect_unsupported(schema, out);
  return {out.begin(), out.end()};
}

}  // namespace kevlaya::pipeline
