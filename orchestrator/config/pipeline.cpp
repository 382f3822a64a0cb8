// pipelines/NAME.yaml -> Pipeline: stages, message templates (placeholders checked against the
// stages that run earlier), sampling and the output constraint (choices or a JSON schema).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/bytes.hpp"
#include "common/strings.hpp"
#include "config/detail.hpp"

namespace kevlaya::config::detail {

namespace {

// Ordered: a schema's properties keep the order they are written in, which is the order
// llama-server's grammar makes the model write them.
using json = nlohmann::ordered_json;

// Plain YAML scalars become JSON numbers/booleans/null; quoted ones stay strings. Sets `failed`
// (after a diagnostic) when a ${VAR} is missing.
json scalar_to_json(Doc& d, const YAML::Node& n, const std::string& key, bool& failed) {
  std::string err;
  const std::string s = expand_env(n.Scalar(), &err);
  if (!err.empty()) {
    d.error(n, key + ": " + err);
    failed = true;
  }
  if (n.Tag() == "!") return s;
  if (s.empty() || s == "~" || s == "null") return nullptr;
  if (s == "true" || s == "false") return s == "true";
  const json num = json::parse(s, nullptr, false);
  if (num.is_number()) return num;
  return s;
}

// A schema written in YAML is bounded after alias expansion: yaml-cpp shares an aliased subtree, but
// the JSON built here copies it, so a 1 KB file of nested anchors could expand to 10^9 nodes (and an
// alias inside its own anchor never ends). Counted while converting (docs/configuration.md).
constexpr std::size_t kMaxSchemaNodes = 100000;
constexpr int kMaxSchemaDepth = 64;

struct Budget {
  std::size_t nodes = 0;
  std::string exceeded;  // why the conversion stopped; reported once, at the schema
  bool failed = false;   // a scalar was reported: stop, so an aliased error is not repeated
  bool stop() const { return failed || !exceeded.empty(); }
};

std::string budget_problem(Budget& b, int depth) {
  if (++b.nodes > kMaxSchemaNodes)
    return "more than " + std::to_string(kMaxSchemaNodes) + " nodes after YAML aliases are expanded";
  if (depth > kMaxSchemaDepth)
    return "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels (an alias inside its own anchor?)";
  return {};
}

json to_json(Doc& d, const YAML::Node& n, const std::string& key, Budget& b, int depth) {
  if (b.stop()) return nullptr;
  if (b.exceeded = budget_problem(b, depth); !b.exceeded.empty()) return nullptr;
  if (n.IsMap()) {
    json o = json::object();
    for (auto it = n.begin(); it != n.end() && !b.stop(); ++it)
      o[it->first.Scalar()] = to_json(d, it->second, key + "." + it->first.Scalar(), b, depth + 1);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (std::size_t i = 0; i < n.size() && !b.stop(); ++i)
      a.push_back(to_json(d, n[i], key + "[" + std::to_string(i) + "]", b, depth + 1));
    return a;
  }
  if (n.IsScalar()) return scalar_to_json(d, n, key, b.failed);
  return nullptr;
}

// The same bounds for a schema given as JSON text, walked without recursion.
std::string json_problem(const json& root) {
  Budget b;
  std::vector<std::pair<const json*, int>> todo{{&root, 1}};
  while (!todo.empty()) {
    const auto [j, depth] = todo.back();
    todo.pop_back();
    if (auto why = budget_problem(b, depth); !why.empty()) return why;
    if (j->is_structured())
      for (const auto& child : *j) todo.emplace_back(&child, depth + 1);
  }
  return {};
}

void read_schema(Doc& d, const YAML::Node& n, const std::string& key, std::string& dst) {
  json j;
  if (n.IsScalar()) {  // JSON text is accepted as well as a YAML mapping
    const auto s = read_string(d, key, n);
    if (!s) return;
    j = json::parse(*s, nullptr, false);
    if (j.is_discarded()) {
      d.error(n, key + ": not valid JSON text; write the schema as a YAML mapping instead");
      return;
    }
    if (const auto why = json_problem(j); !why.empty()) {
      d.error(n, key + ": " + why);
      return;
    }
  } else {
    Budget b;
    j = to_json(d, n, key, b, 1);
    if (!b.exceeded.empty()) d.error(n, key + ": " + b.exceeded);
    if (b.stop()) return;
  }
  if (!j.is_object()) {
    d.error(n, key + ": expected a JSON schema object, got " + describe(n));
    return;
  }
  dst = dump_json(j);  // ${VAR} text may carry any bytes
}

// True when some `enum` in the schema lists `value` (the verdict field of a verify stage).
bool schema_enum_has(const json& j, const std::string& value) {
  if (const auto e = j.find("enum"); e != j.end() && e->is_array() && std::find(e->begin(), e->end(), value) != e->end())
    return true;
  return std::any_of(j.begin(), j.end(), [&](const json& v) { return v.is_structured() && schema_enum_has(v, value); });
}

struct StageBuild {
  Stage stage;
  StageLocs locs;
  std::vector<YAML::Node> content_nodes;  // parallel to stage.messages
  std::optional<YAML::Node> node;
};

void read_messages(Doc& d, const std::string& key, const YAML::Node& n, StageBuild& b) {
  if (!n.IsSequence()) {
    d.error(n, key + ": expected a list of {role, content}, got " + describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string mk = key + "[" + std::to_string(i) + "]";
    Message m;
    std::optional<YAML::Node> content;
    walk_map(d, mk, n[i], {
        {"role", [&](const YAML::Node& v) {
           if (auto r = read_enum(d, mk + ".role", v)) m.role = *r;
         }},
        {"content", [&](const YAML::Node& v) {
           content.emplace(v);
           set_string(d, mk + ".content", v, m.content);
         }},
    });
    if (!n[i].IsMap()) continue;
    if (m.role.empty() || !content) {
      d.error(n[i], mk + ": a message needs both 'role' and 'content'");
      continue;
    }
    b.stage.messages.push_back(m);
    b.content_nodes.push_back(*content);
  }
}

void read_output(Doc& d, const std::string& key, const YAML::Node& n, OutputConstraint& o) {
  bool choices = false, schema = false;
  walk_map(d, key, n, {
      {"choices", [&](const YAML::Node& v) {
         choices = true;
         if (auto c = read_string_list(d, key + ".choices", v, false)) {
           o.choices = *c;
           if (o.choices.empty()) d.error(v, key + ".choices must list at least one choice");
         }
       }},
      {"json_schema", [&](const YAML::Node& v) {
         schema = true;
         read_schema(d, v, key + ".json_schema", o.json_schema);
       }},
  });
  if (choices && schema)
    d.error(n, key + ": set either 'choices' or 'json_schema', not both");
}

void read_sampling(Doc& d, const std::string& key, const YAML::Node& n, Sampling& s) {
  walk_map(d, key, n, {
      {"temperature", [&](const YAML::Node& v) { if (auto x = read_number(d, key + ".temperature", v)) s.temperature = *x; }},
      {"top_p", [&](const YAML::Node& v) { if (auto x = read_number(d, key + ".top_p", v)) s.top_p = *x; }},
      {"seed", [&](const YAML::Node& v) { if (auto x = read_int(d, key + ".seed", v)) s.seed = *x; }},
      {"max_tokens", [&](const YAML::Node& v) { set_int(d, key + ".max_tokens", v, s.max_tokens); }},
  });
}

StageRole role_from_name(const std::string& name) {
  if (name == "decide") return StageRole::decide;
  if (name == "verify") return StageRole::verify;
  return StageRole::other;
}

bool valid_stage_name(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_-]*");
  return std::regex_match(s, re);
}

std::optional<StageBuild> read_stage(Doc& d, const YAML::Node& n, std::size_t index) {
  StageBuild b;
  b.node.emplace(n);
  Stage& st = b.stage;
  st.loc = d.loc(n);
  const std::string key = "stages[" + std::to_string(index) + "]";
  std::optional<std::string> role;
  std::optional<YAML::Node> messages, system, user, name_node;
  const bool ok = walk_map(d, key, n, {
      {"name", [&](const YAML::Node& v) { name_node.emplace(v); set_string(d, key + ".name", v, st.name); }},
      {"role", [&](const YAML::Node& v) { role = read_enum(d, key + ".role", v); }},
      {"model", [&](const YAML::Node& v) { b.locs.model = d.loc(v); set_string(d, key + ".model", v, st.model); }},
      {"messages", [&](const YAML::Node& v) { messages.emplace(v); }},
      {"system", [&](const YAML::Node& v) { system.emplace(v); }},
      {"user", [&](const YAML::Node& v) { user.emplace(v); }},
      {"sampling", [&](const YAML::Node& v) { read_sampling(d, key + ".sampling", v, st.sampling); }},
      {"output", [&](const YAML::Node& v) { read_output(d, key + ".output", v, st.output); }},
      {"pass_value", [&](const YAML::Node& v) { set_string(d, key + ".pass_value", v, st.pass_value); }},
      {"max_invalid_retries", [&](const YAML::Node& v) { set_int(d, key + ".max_invalid_retries", v, st.max_invalid_retries); }},
  });
  if (!ok) return std::nullopt;
  if (!name_node) d.error(n, key + ": missing required key 'name'");
  else if (!st.name.empty() && !valid_stage_name(st.name))
    d.error(*name_node, key + ".name must be a letter or '_' then letters, digits, '_' or '-', got '" +
                            st.name + "'");
  else if (st.name == "input" || st.name == "candidates" || st.name == "feedback" || st.name == "vars")
    d.error(*name_node, "stage name '" + st.name + "' is reserved for a placeholder");
  if (st.model.empty()) d.error(n, "stage '" + st.name + "': missing required key 'model'");
  st.role = role_from_name(role ? *role : st.name);
  if (messages && (system || user))
    d.error(*messages, "stage '" + st.name + "': use either 'messages' or the 'system'/'user' shorthand, not both");
  if (messages) read_messages(d, key + ".messages", *messages, b);
  for (const auto& [r, node] : {std::pair{"system", system}, std::pair{"user", user}}) {
    if (!node) continue;
    if (auto s = read_string(d, key + "." + r, *node)) {
      st.messages.push_back(Message{r, *s});
      b.content_nodes.push_back(*node);
    }
  }
  if (st.messages.empty() && !messages && !system && !user)
    d.error(n, "stage '" + st.name + "' has no messages (set 'messages' or 'system'/'user')");
  return b;
}

// Location of `needle` in the document text at or after the scalar `n` (and after `from`), so a
// placeholder inside a multi-line block scalar is reported on its own line.
SourceLoc locate(const Doc& d, const YAML::Node& n, const std::string& needle, std::size_t& from) {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.pos < 0) return d.loc(n);
  const std::size_t pos = d.text().find(needle, std::max(from, static_cast<std::size_t>(m.pos)));
  if (pos == std::string::npos) return d.loc(n);  // text came from ${VAR} expansion
  from = pos + needle.size();
  return d.loc_at(pos);
}

// Why `name` (the text between the braces, trimmed) is not allowed in stage `i`; empty if fine.
std::string placeholder_problem(const std::string& name, std::size_t i,
                                const std::vector<StageBuild>& stages) {
  static const std::regex var_re("vars\\.[A-Za-z_][A-Za-z0-9_]*");
  if (name == "input" || name == "candidates" || name == "feedback" || name == "verify.feedback" ||
      std::regex_match(name, var_re))
    return {};
  const std::string& here = stages[i].stage.name;
  const auto dot = name.rfind('.');
  const std::string field = dot == std::string::npos ? "" : name.substr(dot + 1);
  if (field == "output" || field == "reason") {
    const std::string ref = name.substr(0, dot);
    for (std::size_t k = 0; k < stages.size(); ++k) {
      if (stages[k].stage.name != ref) continue;
      if (k < i) return {};
      return "placeholder '{{" + name + "}}' in stage '" + here + "' refers to stage '" + ref +
             "', which does not run before it";
    }
  }
  std::vector<std::string> allowed = {"input", "candidates", "feedback", "verify.feedback"};
  for (std::size_t k = 0; k < i; ++k) {
    allowed.push_back(stages[k].stage.name + ".output");
    allowed.push_back(stages[k].stage.name + ".reason");
  }
  const auto guess = suggest(name, allowed);
  const std::string hint = guess ? " (did you mean '{{" + *guess + "}}'?)"
                                 : " (allowed here: {{" + join(allowed, "}}, {{") + "}}, {{vars.NAME}})";
  return "unknown placeholder '{{" + name + "}}' in stage '" + here + "'" + hint;
}

void check_placeholders(Doc& d, const std::vector<StageBuild>& stages) {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& b = stages[i];
    for (std::size_t m = 0; m < b.stage.messages.size(); ++m) {
      const std::string& text = b.stage.messages[m].content;
      const YAML::Node& node = b.content_nodes[m];
      std::size_t from = 0;
      for (std::size_t p = text.find("{{"); p != std::string::npos; p = text.find("{{", p)) {
        const std::size_t close = text.find("}}", p + 2);
        if (close == std::string::npos) {
          d.error(locate(d, node, "{{", from), "unterminated placeholder: '{{' without '}}'");
          break;
        }
        const std::string raw = text.substr(p, close + 2 - p);
        const std::string name(trim_blanks(std::string_view(text).substr(p + 2, close - p - 2)));
        const SourceLoc at = locate(d, node, raw, from);
        const std::string why = placeholder_problem(name, i, stages);
        if (!why.empty()) d.error(at, why);
        p = close + 2;
      }
    }
  }
}

}  // namespace

void parse_pipeline(Doc& d, std::vector<Pipeline>& out, std::vector<PipelineLocs>& locs) {
  d.set_kind(DocKind::pipeline);
  Pipeline pl;
  PipelineLocs ploc;
  pl.file = d.file();
  pl.loc = d.loc(d.root());
  pl.name = d.file().stem().string();
  ploc.name = pl.loc;
  std::vector<StageBuild> stages;
  std::optional<YAML::Node> stages_node;
  bool name_set = false;
  const bool ok = walk_map(d, "pipeline", d.root(), {
      {"name", [&](const YAML::Node& v) { name_set = true; ploc.name = d.loc(v); set_string(d, "name", v, pl.name); }},
      {"max_rounds", [&](const YAML::Node& v) { set_int(d, "max_rounds", v, pl.max_rounds); }},
      {"stages", [&](const YAML::Node& v) {
         stages_node.emplace(v);
         if (!v.IsSequence()) {
           d.error(v, "stages: expected a list of stages, got " + describe(v));
           return;
         }
         for (std::size_t i = 0; i < v.size(); ++i)
           if (auto s = read_stage(d, v[i], i)) stages.push_back(std::move(*s));
       }},
  });
  if (!ok) return;
  if (printable(pl.name) != pl.name)  // a name in URLs and JSON: bytes of a path won't do
    d.error(ploc.name, "pipeline name '" + printable(pl.name) + "' must be UTF-8 text without control characters" +
                           (name_set ? "" : "; it comes from the file name: rename the file or set 'name:' in it"));
  if (!stages_node) {
    d.error(d.root(), "missing required key 'stages' (the ordered list of stages)");
    return;
  }
  if (stages_node->IsSequence() && stages_node->size() == 0)
    d.error(*stages_node, "stages: a pipeline needs at least one stage");
  std::map<std::string, SourceLoc> names;
  int decide = 0, verify = 0;
  for (const auto& b : stages) {
    const auto [it, fresh] = names.emplace(b.stage.name, b.stage.loc);
    if (!fresh)
      d.error(b.stage.loc, "duplicate stage name '" + b.stage.name + "' (first at line " +
                               std::to_string(it->second.line) + ")");
    decide += b.stage.role == StageRole::decide;
    verify += b.stage.role == StageRole::verify;
    const Stage& st = b.stage;
    if (st.role != StageRole::verify) continue;
    if (!st.output.choices.empty() &&
        std::find(st.output.choices.begin(), st.output.choices.end(), st.pass_value) ==
            st.output.choices.end())
      d.error(*b.node, "verify stage '" + st.name + "': pass_value '" + st.pass_value +
                           "' is not one of its choices");
    if (!st.output.json_schema.empty() &&
        !schema_enum_has(json::parse(st.output.json_schema), st.pass_value))
      d.warn(*b.node, "verify stage '" + st.name + "': no enum in json_schema lists pass_value '" +
                          st.pass_value + "'");
    if (st.output.choices.empty() && st.output.json_schema.empty())
      d.warn(*b.node, "verify stage '" + st.name + "' has no output constraint; its verdict is "
                      "compared to pass_value '" + st.pass_value + "' as free text");
  }
  if (decide > 1 || verify > 1)
    d.error(*stages_node, "a pipeline has at most one 'decide' and one 'verify' stage");
  check_placeholders(d, stages);
  for (auto& b : stages) {
    pl.stages.push_back(std::move(b.stage));
    ploc.stages.push_back(b.locs);
  }
  out.push_back(std::move(pl));
  locs.push_back(std::move(ploc));
}

}  // namespace kevlaya::config::detail
