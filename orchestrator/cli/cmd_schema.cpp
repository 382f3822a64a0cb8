// `schema [orchestrator|profile|pipeline] [--out DIR]`: the JSON Schema of each kind of file,
// generated from the key table that `check` reads (config/keys.hpp).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "config/keys.hpp"

namespace kevlaya::cli {

namespace {

using config::DocKind;

// The file name each schema is written to (and installed as, under /usr/share/kevlaya-orch/schema).
std::string schema_file(DocKind kind) { return std::string(config::kind_name(kind)) + ".schema.json"; }

int write_all(const std::string& dir) {
  std::error_code ec;
  config::fs::create_directories(dir, ec);
  for (const DocKind kind : {DocKind::orchestrator, DocKind::profile, DocKind::pipeline}) {
    const auto path = config::fs::path(dir) / schema_file(kind);
    std::ofstream out(path);
    out << config::json_schema(kind).dump(2) << '\n';
    if (!out) {
      std::cerr << "kevlaya-orch schema: cannot write " << path.string() << '\n';
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace

void add_schema(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("schema", "Print the JSON Schema of kevlaya.yaml, a profile or a pipeline");
  auto kind = std::make_shared<std::string>("orchestrator");
  auto out = std::make_shared<std::string>();
  sub->add_option("KIND", *kind, "orchestrator (kevlaya.yaml), profile or pipeline")
      ->check(CLI::IsMember({"orchestrator", "profile", "pipeline"}));
  sub->add_option("--out", *out, "write all three as DIR/<kind>.schema.json instead of printing one");
  sub->callback([&g, kind, out] {
    if (!out->empty()) {
      g.exit_code = write_all(*out);
      return;
    }
    const DocKind k = *kind == "profile" ? DocKind::profile : *kind == "pipeline" ? DocKind::pipeline : DocKind::orchestrator;
    std::cout << config::json_schema(k).dump(2) << '\n';
    g.exit_code = kExitOk;
  });
}

}  // namespace kevlaya::cli
