// Typed readers over YAML nodes: every bad value becomes a diagnostic that says what was expected,
// what was found and where; nothing here throws for user input.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "common/strings.hpp"
#include "config/detail.hpp"

namespace kevlaya::config::detail {

namespace {

bool parse_i64(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  if (*b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

std::optional<bool> parse_bool(const std::string& s) {
  static const std::map<std::string, bool> words = {
      {"true", true}, {"yes", true}, {"on", true}, {"false", false}, {"no", false}, {"off", false}};
  const auto it = words.find(ascii_lower(s));
  if (it == words.end()) return std::nullopt;
  return it->second;
}

// Scalar text with ${VAR} expanded; nullopt (with a diagnostic) when a variable is missing.
std::optional<std::string> expanded(Doc& d, const std::string& key, const YAML::Node& n) {
  std::string err;
  std::string v = expand_env(n.Scalar(), &err);
  if (!err.empty()) {
    d.error(n, key + ": " + err);
    return std::nullopt;
  }
  return v;
}

bool expect_scalar(Doc& d, const std::string& key, const YAML::Node& n, const char* what) {
  if (n.IsScalar()) return true;
  d.error(n, key + ": expected " + what + ", got " + describe(n));
  return false;
}

// Optimal-string-alignment distance: a swapped pair of letters ("modle") counts as one edit.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> t(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) t[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) t[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      t[i][j] = std::min({t[i - 1][j] + 1, t[i][j - 1] + 1, t[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        t[i][j] = std::min(t[i][j], t[i - 2][j - 2] + 1);
    }
  }
  return t[a.size()][b.size()];
}

// Spellings people bring from llama.cpp flags or other tools.
const std::map<std::string, std::string>& synonyms() {
  static const std::map<std::string, std::string> m = {
      {"context", "ctx"},        {"ctx_size", "ctx"},       {"ctx-size", "ctx"},
      {"n_ctx", "ctx"},          {"gpu_layers", "ngl"},     {"n_gpu_layers", "ngl"},
      {"gpu-layers", "ngl"},     {"np", "parallel"},        {"n_parallel", "parallel"},
      {"batch_size", "batch"},   {"flash-attn", "flash_attn"}, {"fa", "flash_attn"},
      {"args", "extra_args"},    {"aliases", "alias"},      {"loras", "lora"},
      {"model_path", "model"},   {"prompt", "user"},        {"temp", "temperature"},
      {"choices", "candidates"}, {"options", "candidates"},
  };
  return m;
}

// The key table's names for a mapping, after checking that `fields` reads exactly those.
std::vector<std::string> table_names(const Key& map, const std::vector<Field>& fields) {
  std::vector<std::string> names;
  for (const auto& c : map.children) names.push_back(c.name);
  for (const auto& f : fields)
    if (!map.child(f.name))
      throw std::logic_error("config/keys.cpp: '" + map.name + "' lacks the key '" + f.name + "' its reader reads");
  for (const auto& n : names)
    if (std::none_of(fields.begin(), fields.end(), [&](const Field& f) { return f.name == n; }))
      throw std::logic_error("config/keys.cpp: '" + map.name + "." + n + "' has no reader");
  return names;
}

}  // namespace

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  const std::string& s = n.Scalar();
  if (n.Tag() != "!") {  // plain scalars may be numbers or booleans; quoted ones are strings
    double dv = 0;
    if (parse_double(s, dv)) return "number " + s;
    if (parse_bool(s)) return "boolean " + s;
  }
  return "string \"" + s + "\"";
}

std::optional<std::string> suggest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
  const auto syn = synonyms().find(std::string(word));
  if (syn != synonyms().end() &&
      std::find(candidates.begin(), candidates.end(), syn->second) != candidates.end())
    return syn->second;
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(1, word.size() / 2) + 1;
  for (const auto& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    if (dist < best_d) { best_d = dist; best = c; }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto s = suggest(word, candidates);
  return s ? " (did you mean '" + *s + "'?)" : std::string();
}

std::optional<std::string> read_string(Doc& d, const std::string& key, const YAML::Node& n) {
  if (!expect_scalar(d, key, n, "a string")) return std::nullopt;
  return expanded(d, key, n);
}

std::optional<std::int64_t> read_int(Doc& d, const std::string& key, const YAML::Node& n,
                                     std::int64_t lo, std::int64_t hi) {
  if (!expect_scalar(d, key, n, "an integer")) return std::nullopt;
  const auto s = expanded(d, key, n);
  if (!s) return std::nullopt;
  std::int64_t v = 0;
  if (!parse_i64(*s, v)) {
    d.error(n, key + ": expected an integer, got " + describe(n));
    return std::nullopt;
  }
  if (v < lo || v > hi) {
    const std::string range = hi == INT64_MAX || (hi == INT32_MAX && lo >= 0)
                                  ? "must be >= " + std::to_string(lo)
                                  : "must be between " + std::to_string(lo) + " and " +
                                        std::to_string(hi);
    d.error(n, key + " " + range + ", got " + std::to_string(v));
    return std::nullopt;
  }
  return v;
}

std::optional<std::int64_t> read_int(Doc& d, const std::string& key, const YAML::Node& n) {
  const Key& k = d.key(key);
  return read_int(d, key, n, k.lo, k.hi);
}

std::optional<double> read_number(Doc& d, const std::string& key, const YAML::Node& n) {
  const double lo = d.key(key).flo, hi = d.key(key).fhi;
  if (!expect_scalar(d, key, n, "a number")) return std::nullopt;
  const auto s = expanded(d, key, n);
  if (!s) return std::nullopt;
  double v = 0;
  if (!parse_double(*s, v)) {
    d.error(n, key + ": expected a number, got " + describe(n));
    return std::nullopt;
  }
  if (v < lo || v > hi) {
    d.error(n, key + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                   ", got " + *s);
    return std::nullopt;
  }
  return v;
}

std::optional<bool> read_bool(Doc& d, const std::string& key, const YAML::Node& n) {
  if (!expect_scalar(d, key, n, "true or false")) return std::nullopt;
  const auto s = expanded(d, key, n);
  if (!s) return std::nullopt;
  const auto b = parse_bool(*s);
  if (!b) d.error(n, key + ": expected true or false, got " + describe(n));
  return b;
}

std::optional<std::string> read_enum(Doc& d, const std::string& key, const YAML::Node& n) {
  const std::vector<std::string>& allowed = d.key(key).words;
  auto s = read_string(d, key, n);
  if (!s) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *s) != allowed.end()) return s;
  d.error(n, key + " must be one of " + join(allowed, ", ") + ", got '" + *s + "'" + did_you_mean(*s, allowed));
  return std::nullopt;
}

std::optional<std::vector<std::string>> read_string_list(Doc& d, const std::string& key,
                                                         const YAML::Node& n, bool scalar_ok) {
  if (scalar_ok && n.IsScalar()) {
    auto s = read_string(d, key, n);
    if (!s) return std::nullopt;
    return std::vector<std::string>{*s};
  }
  if (!n.IsSequence()) {
    d.error(n, key + ": expected a list of strings, got " + describe(n));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    auto s = read_string(d, key + "[" + std::to_string(i) + "]", n[i]);
    if (s) out.push_back(*s); else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> read_string_map(Doc& d, const std::string& key,
                                                                  const YAML::Node& n) {
  if (!n.IsMap()) {
    d.error(n, key + ": expected a mapping of names to strings, got " + describe(n));
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = it->first.Scalar();
    auto v = read_string(d, key + "." + k, it->second);
    if (v) out[k] = *v; else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<fs::path> read_path(Doc& d, const std::string& key, const YAML::Node& n) {
  auto s = read_string(d, key, n);
  if (!s) return std::nullopt;
  if (s->empty()) {
    d.error(n, key + ": expected a path, got an empty string");
    return std::nullopt;
  }
  fs::path p = *s;
  if (s->rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    if (home) p = fs::path(home) / s->substr(2);
  }
  if (p.is_relative()) p = d.dir() / p;
  return p.lexically_normal();
}

// The table's ranges of int fields fit an int (keys_test checks it).
void set_int(Doc& d, const std::string& key, const YAML::Node& n, int& dst) {
  if (auto v = read_int(d, key, n)) dst = static_cast<int>(*v);
}

void set_int64(Doc& d, const std::string& key, const YAML::Node& n, std::int64_t& dst) {
  if (auto v = read_int(d, key, n)) dst = *v;
}

void set_string(Doc& d, const std::string& key, const YAML::Node& n, std::string& dst) {
  if (auto v = read_string(d, key, n)) dst = *v;
}

void set_bool(Doc& d, const std::string& key, const YAML::Node& n, bool& dst) {
  if (auto v = read_bool(d, key, n)) dst = *v;
}

bool walk_map(Doc& d, const std::string& what, const YAML::Node& map,
              const std::vector<Field>& fields) {
  if (!map.IsMap()) {
    d.error(map, what + ": expected a mapping, got " + describe(map));
    return false;
  }
  std::vector<std::string> names = table_names(d.key(what), fields);
  std::map<std::string, int> seen;  // key -> line of first use
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator's -> yields a temporary proxy, so references into it would dangle.
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) {
      d.error(k, "keys in " + what + " must be plain names, got " + describe(k));
      continue;
    }
    const std::string key = k.Scalar();
    const auto [pos, fresh] = seen.emplace(key, d.loc(k).line);
    if (!fresh) {
      d.error(k, "duplicate key '" + key + "' in " + what + " (first set at line " +
                     std::to_string(pos->second) + ")");
      continue;
    }
    const auto f = std::find_if(fields.begin(), fields.end(),
                                [&](const Field& x) { return x.name == key; });
    if (f == fields.end()) {
      d.error(k, "unknown key '" + key + "' in " + what + did_you_mean(key, names));
      continue;
    }
    f->read(v);
  }
  return true;
}

}  // namespace kevlaya::config::detail
