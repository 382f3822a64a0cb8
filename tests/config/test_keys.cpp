// The key table (config/keys.hpp) against the checker and the JSON Schema: every key of the table
// is accepted by `check` with exactly its type and range, every mapping the checker reads is in the
// table (walk_map throws otherwise, so visiting each one proves it), and the schema says the same.
#include <catch2/catch.hpp>
#include <functional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "config/fixture.hpp"
#include "config/keys.hpp"

using namespace kevlaya::test;
using cfg::DocKind;
using cfg::Key;
using cfg::KeyType;
using json = nlohmann::json;

namespace {

struct Leaf {
  std::vector<const Key*> chain;  // from the root's child to the leaf
  std::string path;               // "stages.sampling.seed"
};

void leaves(const Key& k, std::vector<const Key*> chain, std::vector<Leaf>& out) {
  for (const auto& c : k.children) {
    auto next = chain;
    next.push_back(&c);
    if (c.type == KeyType::object || c.type == KeyType::objects) leaves(c, next, out);
    std::string path;
    for (const Key* x : next) path += (path.empty() ? "" : ".") + x->name;
    out.push_back(Leaf{next, path});
  }
}

// YAML setting the leaf to `value`, alone on the last line; `line` is that line's number.
std::string nest(const Leaf& l, const std::string& value, int& line) {
  std::string text, indent, item;  // item: the "- " prefix of a list's first mapping
  line = 0;
  for (std::size_t i = 0; i < l.chain.size(); ++i) {
    const Key& k = *l.chain[i];
    ++line;
    text += (item.empty() ? indent : item) + k.name + ":" + (i + 1 == l.chain.size() ? " " + value : "") + "\n";
    item.clear();
    if (k.type == KeyType::objects) item = indent + "  - ";
    indent += k.type == KeyType::objects ? "    " : "  ";
  }
  return text;
}

cfg::LoadResult load(DocKind kind, const TempDir& dir, const std::string& body) {
  switch (kind) {
    case DocKind::orchestrator:
      write_text(dir / "profiles/.keep", "");
      write_text(dir / "kevlaya.yaml", body);
      return cfg::load(dir / "kevlaya.yaml");
    case DocKind::profile: return cfg::load_profile_file(write_profile(dir, "p.yaml", body));
    case DocKind::pipeline: write_text(dir / "pl.yaml", body); return cfg::load_pipeline_file(dir / "pl.yaml");
  }
  return {};
}

// The errors the typed readers give at `line`: a wrong type, a range, an unknown key.
std::vector<std::string> type_errors(const cfg::LoadResult& r, int line) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics)
    if (d.severity == cfg::Severity::error && d.loc.line == line &&
        (d.message.find("must be") != std::string::npos || d.message.find("expected") != std::string::npos ||
         d.message.find("unknown key") != std::string::npos))
      out.push_back(d.format());
  return out;
}

void expect(DocKind kind, const Leaf& l, const std::string& value, bool accepted) {
  TempDir dir("keys");
  int line = 0;
  const std::string body = nest(l, value, line);
  const auto r = load(kind, dir, body);
  INFO(cfg::kind_name(kind) << " key " << l.path << " = " << value << "\n" << body << dump(r));
  if (accepted) CHECK(type_errors(r, line).empty());
  else CHECK_FALSE(type_errors(r, line).empty());
}

std::string num(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

void check_leaf(DocKind kind, const Leaf& l) {
  const Key& k = *l.chain.back();
  switch (k.type) {
    case KeyType::integer:
      expect(kind, l, std::to_string(k.lo), true);
      expect(kind, l, std::to_string(k.hi), true);
      if (k.lo != INT64_MIN) expect(kind, l, std::to_string(k.lo - 1), false);
      if (k.hi != INT64_MAX) expect(kind, l, std::to_string(k.hi + 1), false);
      for (const auto& w : k.words) expect(kind, l, w, true);
      if (k.int_list) expect(kind, l, "[" + std::to_string(k.lo) + ", " + std::to_string(k.hi) + "]", true);
      expect(kind, l, "lots", false);
      break;
    case KeyType::number:
      expect(kind, l, num(k.flo), true);
      expect(kind, l, num(k.fhi), true);
      expect(kind, l, num(k.flo - 0.5), false);
      expect(kind, l, num(k.fhi + 0.5), false);
      break;
    case KeyType::boolean:
      expect(kind, l, "true", true);
      expect(kind, l, "maybe", false);
      break;
    case KeyType::word:
      for (const auto& w : k.words) expect(kind, l, w, true);
      expect(kind, l, "not-a-word", false);
      break;
    case KeyType::object: expect(kind, l, "5", false); break;
    case KeyType::objects: expect(kind, l, "{}", false); break;
    case KeyType::string_map: expect(kind, l, "[a]", false); break;
    case KeyType::schema: expect(kind, l, "[1]", false); break;  // a schema is a mapping (or JSON text of one)
    default: expect(kind, l, "{a: 1}", false); break;  // text: a mapping is not text
  }
}

// The schema node of a leaf (through "properties" and array "items").
const json& schema_at(const json& root, const Leaf& l) {
  const json* at = &root;
  for (const Key* k : l.chain) {
    if (at->value("type", "") == "array") at = &(*at)["items"];
    at = &(*at)["properties"][k->name];
  }
  return *at;
}

const json* typed(const json& node, const std::string& type) {
  if (node.value("type", json()) == type) return &node;
  if (node.contains("anyOf"))
    for (const auto& a : node["anyOf"])
      if (a.value("type", json()) == type) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("keys: check accepts every key of the table with its type and range, and nothing else", "[config]") {
  for (const DocKind kind : {DocKind::orchestrator, DocKind::profile, DocKind::pipeline}) {
    std::vector<Leaf> all;
    leaves(cfg::key_table(kind), {}, all);
    REQUIRE(all.size() > 5);
    for (const auto& l : all) check_leaf(kind, l);
  }
}

TEST_CASE("keys: a misspelled key is refused and the suggestion comes from the table", "[config]") {
  TempDir dir("keys");
  const auto r = load(DocKind::profile, dir, "model: m.gguf\nhealth:\n  stall_timeout: 5\n");
  INFO(dump(r));
  CHECK(has_diag(r, diag(dir / "p.yaml", 3, 3, "unknown key 'stall_timeout' in health (did you mean 'stall_timeout_s'?)")));
}

TEST_CASE("keys: the JSON Schema of each kind states the table's types and ranges", "[config]") {
  for (const DocKind kind : {DocKind::orchestrator, DocKind::profile, DocKind::pipeline}) {
    const json schema = cfg::json_schema(kind);
    CHECK(schema["additionalProperties"] == false);
    std::vector<Leaf> all;
    leaves(cfg::key_table(kind), {}, all);
    for (const auto& l : all) {
      const Key& k = *l.chain.back();
      const json& s = schema_at(schema, l);
      INFO(cfg::kind_name(kind) << " " << l.path << ": " << s.dump());
      REQUIRE(s.is_object());
      switch (k.type) {
        case KeyType::integer: {
          const json* i = typed(s, "integer");
          REQUIRE(i);
          CHECK(i->value("minimum", INT64_MIN) == k.lo);
          CHECK(i->value("maximum", INT64_MAX) == k.hi);
          break;
        }
        case KeyType::number: {
          const json* n = typed(s, "number");
          REQUIRE(n);
          CHECK((*n)["minimum"] == k.flo);
          CHECK((*n)["maximum"] == k.fhi);
          break;
        }
        case KeyType::boolean: CHECK(typed(s, "boolean")); break;
        case KeyType::word: CHECK(s["enum"] == json(k.words)); break;
        case KeyType::object: CHECK(s["additionalProperties"] == false); break;
        case KeyType::objects: CHECK(s["items"]["additionalProperties"] == false); break;
        default: CHECK((typed(s, "string") || typed(s, "array") || typed(s, "object") || s.value("type", json()).is_array()));
      }
    }
    for (const auto& [name, prop] : schema["properties"].items())
      CHECK(cfg::find_key(kind, name));
  }
}

TEST_CASE("cli schema: prints each kind and writes all three with --out", "[cli]") {
  const auto r = run_command(orch_binary().string() + " schema profile");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.output);
  CHECK(j["properties"].contains("ctx"));
  CHECK(j == cfg::json_schema(DocKind::profile));
  TempDir dir("schema");
  const auto w = run_command(orch_binary().string() + " schema --out " + dir.path().string());
  INFO(w.output);
  REQUIRE(w.exit_code == 0);
  CHECK(json::parse(read_text(dir / "orchestrator.schema.json")) == cfg::json_schema(DocKind::orchestrator));
  CHECK(json::parse(read_text(dir / "pipeline.schema.json")) == cfg::json_schema(DocKind::pipeline));
  CHECK(run_command(orch_binary().string() + " schema nonsense").exit_code != 0);
}
