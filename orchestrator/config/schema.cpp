// JSON Schema from the key table (config/keys.hpp): what editors check while a file is written.
// Scalars that are not strings also accept "${VAR}" text, as the loaders expand it before reading.
#include <nlohmann/json.hpp>

#include "config/keys.hpp"

namespace kevlaya::config {

namespace {

using json = nlohmann::json;

const json& env_text() {
  static const json j = {{"type", "string"}, {"pattern", "\\$\\{[A-Za-z_][A-Za-z0-9_]*"}};
  return j;
}

json with_env(json typed) { return json{{"anyOf", json::array({std::move(typed), env_text()})}}; }

json integer_schema(const Key& k) {
  json j = {{"type", "integer"}};
  if (k.lo != INT64_MIN) j["minimum"] = k.lo;
  if (k.hi != INT64_MAX) j["maximum"] = k.hi;
  json any = json::array({j, env_text()});
  if (!k.words.empty()) any.push_back(json{{"enum", k.words}});
  if (k.int_list) any.push_back(json{{"type", "array"}, {"items", j}, {"minItems", 1}, {"uniqueItems", true}});
  return json{{"anyOf", any}};
}

json key_schema(const Key& k);

json object_schema(const Key& k) {
  json props = json::object(), required = json::array();
  for (const auto& c : k.children) {
    props[c.name] = key_schema(c);
    if (c.required) required.push_back(c.name);
  }
  json j = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  if (!required.empty()) j["required"] = required;
  return j;
}

json key_schema(const Key& k) {
  const json str = {{"type", "string"}};
  const json list = {{"type", "array"}, {"items", str}};
  switch (k.type) {
    case KeyType::integer: return integer_schema(k);
    case KeyType::number: return with_env({{"type", "number"}, {"minimum", k.flo}, {"maximum", k.fhi}});
    case KeyType::boolean: return with_env({{"type", "boolean"}});
    case KeyType::string: return str;
    case KeyType::path: return {{"type", "string"}, {"minLength", 1}};
    case KeyType::word: return {{"enum", k.words}};
    case KeyType::strings: return list;
    case KeyType::strings_or_string: return {{"anyOf", json::array({str, list})}};
    case KeyType::string_map: return {{"type", "object"}, {"additionalProperties", str}};
    case KeyType::object: return object_schema(k);
    case KeyType::objects: return {{"type", "array"}, {"items", object_schema(k)}};
    case KeyType::schema: return {{"type", json::array({"object", "string"})}};
  }
  return json::object();
}

}  // namespace

json json_schema(DocKind kind) {
  json j = object_schema(key_table(kind));
  j["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  j["title"] = "kevlaya-orch " + std::string(kind_name(kind)) +
               (kind == DocKind::orchestrator ? " configuration (kevlaya.yaml)" : " file");
  return j;
}

}  // namespace kevlaya::config
