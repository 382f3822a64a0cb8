#include "constrain.hpp"

#include <cctype>
#include <map>
#include <stdexcept>

namespace standin {
namespace {

using json = nlohmann::json;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Drops '#' comments outside string literals.
std::string strip_comments(const std::string& g) {
  std::string out;
  bool in_str = false;
  for (size_t i = 0; i < g.size(); i++) {
    const char c = g[i];
    if (in_str && c == '\\' && i + 1 < g.size()) {
      out += c;
      out += g[++i];
      continue;
    }
    if (c == '"') in_str = !in_str;
    if (!in_str && c == '#') {
      while (i < g.size() && g[i] != '\n') i++;
      out += '\n';
      continue;
    }
    out += c;
  }
  return out;
}

// "name ::= body" definitions; a body continues until the next line holding "::=".
std::map<std::string, std::string> split_rules(const std::string& g) {
  std::map<std::string, std::string> rules;
  std::string current;
  size_t pos = 0;
  while (pos <= g.size()) {
    const size_t nl = g.find('\n', pos);
    const std::string line = g.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    const size_t def = line.find("::=");
    if (def != std::string::npos) {
      current = trim(line.substr(0, def));
      rules[current] = line.substr(def + 3);
    } else if (!current.empty()) {
      rules[current] += " " + line;
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return rules;
}

// Parses a sequence of string literals (the whole of `alt`); nullopt if anything else is there.
std::optional<std::string> literal_sequence(const std::string& alt) {
  std::string out;
  size_t i = 0;
  bool any = false;
  while (i < alt.size()) {
    if (std::isspace(static_cast<unsigned char>(alt[i]))) { i++; continue; }
    if (alt[i] != '"') return std::nullopt;
    for (i++; i < alt.size() && alt[i] != '"'; i++) {
      if (alt[i] == '\\' && i + 1 < alt.size()) {
        const char e = alt[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      } else {
        out += alt[i];
      }
    }
    if (i >= alt.size()) return std::nullopt;
    i++;
    any = true;
  }
  if (!any) return std::nullopt;
  return out;
}

std::vector<std::string> split_alternatives(std::string body) {
  body = trim(body);
  if (body.size() >= 2 && body.front() == '(' && body.back() == ')') body = body.substr(1, body.size() - 2);
  std::vector<std::string> alts;
  std::string cur;
  bool in_str = false;
  for (size_t i = 0; i < body.size(); i++) {
    const char c = body[i];
    if (in_str && c == '\\' && i + 1 < body.size()) { cur += c; cur += body[++i]; continue; }
    if (c == '"') in_str = !in_str;
    if (!in_str && c == '|') { alts.push_back(trim(cur)); cur.clear(); continue; }
    cur += c;
  }
  alts.push_back(trim(cur));
  return alts;
}

const json* resolve_ref(const json& root, const std::string& ref) {
  if (ref.rfind("#/", 0) != 0) return nullptr;
  const json* cur = &root;
  size_t pos = 2;
  while (pos <= ref.size()) {
    const size_t slash = ref.find('/', pos);
    const std::string key = ref.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &cur->at(key);
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return cur;
}

std::uint64_t next(std::uint64_t& d) {
  d = d * 6364136223846793005ull + 1442695040888963407ull;
  return d >> 33;
}

json instance(const json& s, const json& root, std::uint64_t& d, int depth);

json object_instance(const json& s, const json& root, std::uint64_t& d, int depth) {
  json out = json::object();
  const json props = s.value("properties", json::object());
  if (s.contains("required")) {
    for (const auto& name : s.at("required")) {
      const std::string key = name.get<std::string>();
      out[key] = instance(props.value(key, json::object()), root, d, depth + 1);
    }
  } else {
    for (const auto& [key, sub] : props.items()) out[key] = instance(sub, root, d, depth + 1);
  }
  return out;
}

json string_instance(const json& s, std::uint64_t& d) {
  static const char* kWords[] = {"alpha", "bravo", "delta", "kilo", "lima", "sierra"};
  if (s.value("format", "") == "date") return "2024-01-01";
  std::string v = kWords[next(d) % 6];
  const auto min_len = s.value("minLength", 0u);
  const auto max_len = s.value("maxLength", 1u << 30);
  while (v.size() < min_len) v += "x";
  if (v.size() > max_len) v.resize(max_len);
  return v;
}

json number_instance(const json& s, bool integer) {
  double v = 0;
  if (s.contains("minimum")) v = s.at("minimum").get<double>();
  if (s.contains("exclusiveMinimum") && s.at("exclusiveMinimum").is_number())
    v = s.at("exclusiveMinimum").get<double>() + 1;
  if (s.contains("maximum") && v > s.at("maximum").get<double>()) v = s.at("maximum").get<double>();
  if (integer) return static_cast<long long>(v);
  return v;
}

json instance(const json& s, const json& root, std::uint64_t& d, int depth) {
  if (depth > 32 || !s.is_object()) return nullptr;
  if (s.contains("$ref")) {
    const json* target = resolve_ref(root, s.at("$ref").get<std::string>());
    return target ? instance(*target, root, d, depth + 1) : json(nullptr);
  }
  if (s.contains("const")) return s.at("const");
  if (s.contains("enum") && !s.at("enum").empty()) return s.at("enum").at(next(d) % s.at("enum").size());
  for (const char* k : {"anyOf", "oneOf", "allOf"}) {
    if (s.contains(k) && !s.at(k).empty()) return instance(s.at(k).at(0), root, d, depth + 1);
  }
  json type = s.value("type", json());
  if (type.is_array()) type = type.empty() ? json() : type.at(0);
  const std::string t = type.is_string() ? type.get<std::string>() : (s.contains("properties") ? "object" : "");
  if (t == "object") return object_instance(s, root, d, depth);
  if (t == "array") {
    json arr = json::array();
    for (unsigned i = 0; i < s.value("minItems", 0u); i++) arr.push_back(instance(s.value("items", json::object()), root, d, depth + 1));
    return arr;
  }
  if (t == "string") return string_instance(s, d);
  if (t == "integer") return number_instance(s, true);
  if (t == "number") return number_instance(s, false);
  if (t == "boolean") return next(d) % 2 == 0;
  if (t == "null") return nullptr;
  return json::object();  // "any": an empty object is valid against {}
}

}  // namespace

std::optional<std::vector<std::string>> grammar_alternatives(const std::string& gbnf) {
  auto rules = split_rules(strip_comments(gbnf));
  if (!rules.count("root")) throw std::invalid_argument("failed to parse grammar");
  std::string body = rules.at("root");
  const std::string hop = trim(body);
  if (rules.count(hop)) body = rules.at(hop);  // root ::= answer ; answer ::= "a" | "b"
  std::vector<std::string> out;
  for (const auto& alt : split_alternatives(body)) {
    auto lit = literal_sequence(alt);
    if (!lit) return std::nullopt;
    out.push_back(*lit);
  }
  return out;
}

std::string schema_instance(const nlohmann::json& schema, std::uint64_t digest) {
  std::uint64_t d = digest;
  return instance(schema, schema, d, 0).dump();
}

}  // namespace standin
