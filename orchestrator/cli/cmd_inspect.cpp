// `kevlaya-orch inspect FILE.gguf [--json]`: a one-screen summary of a model or adapter file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/bytes.hpp"
#include "gguf/gguf.hpp"

namespace kevlaya::cli {
namespace {

// `n` in the largest of `units` (each `step` times the last) that keeps it at least 1.
std::string human(std::uint64_t n, double step, const char* const (&units)[5], const char* fmt) {
  double v = static_cast<double>(n);
  int u = 0;
  for (; v >= step && u < 4; ++u) v /= step;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : fmt, v, units[u]);
  return buf;
}

std::string human_bytes(std::uint64_t n) { return human(n, 1024, {" B", " KiB", " MiB", " GiB", " TiB"}, "%.1f%s"); }
std::string human_count(std::uint64_t n) { return human(n, 1000, {"", "K", "M", "B", "T"}, "%.2f%s"); }

nlohmann::json to_json(const gguf::ModelInfo& m) {
  nlohmann::json j{
      {"path", m.path.string()}, {"file_size", m.file_size}, {"architecture", m.architecture},
      {"name", m.name}, {"type", m.general_type.empty() ? "model" : m.general_type},
      {"params", m.n_params}, {"file_type", m.file_type}, {"quant", m.quant},
      {"n_layer", m.n_layer}, {"n_embd", m.n_embd}, {"n_head", m.n_head}, {"n_head_kv", m.n_head_kv},
      {"head_dim_k", m.head_dim_k}, {"head_dim_v", m.head_dim_v}, {"n_ff", m.n_ff},
      {"n_ctx_train", m.n_ctx_train}, {"n_vocab", m.n_vocab}, {"tensor_bytes", m.tensor_bytes},
      {"layer_bytes", m.layer_bytes}, {"output_bytes", m.output_bytes},
      {"token_embd_bytes", m.token_embd_bytes}, {"other_bytes", m.other_bytes},
      {"bytes_by_type", m.bytes_by_type}};
  if (m.general_type == "adapter") {
    j["adapter"] = {{"type", m.adapter_type}, {"alpha", m.lora_alpha}, {"rank", m.lora_rank},
                    {"targets", m.lora_targets}};
  }
  return j;
}

void print_text(const gguf::ModelInfo& m) {
  auto row = [](const char* k, const std::string& v) { std::cout << std::left << std::setw(14) << k << v << "\n"; };
  const auto n = [](std::uint64_t x) { return std::to_string(x); };
  row("file", m.path.string() + " (" + human_bytes(m.file_size) + ")");
  row("architecture", m.architecture.empty() ? "(none)" : m.architecture);
  row("name", m.name.empty() ? "(none)" : m.name);
  row("type", m.general_type.empty() ? "model" : m.general_type);
  row("params", human_count(m.n_params) + " (" + n(m.n_params) + ")");
  row("quant", m.quant + " (file_type " + n(m.file_type) + ")");
  if (m.general_type != "adapter") {
    row("layers", n(m.n_layer));
    row("heads", n(m.n_head) + " (KV heads " + n(m.n_head_kv) + ")");
    row("head dims", "k " + n(m.head_dim_k) + ", v " + n(m.head_dim_v));
    row("embd / ffn", n(m.n_embd) + " / " + n(m.n_ff));
    row("ctx_train", n(m.n_ctx_train));
    row("vocab", n(m.n_vocab));
  }
  std::uint64_t layers = 0;
  for (const auto b : m.layer_bytes) layers += b;
  row("tensor bytes", human_bytes(m.tensor_bytes) + " (layers " + human_bytes(layers) + ", output " +
                          human_bytes(m.output_bytes) + ", token_embd " + human_bytes(m.token_embd_bytes) +
                          ", other " + human_bytes(m.other_bytes) + ")");
  std::string types;
  for (const auto& [t, b] : m.bytes_by_type) types += (types.empty() ? "" : ", ") + t + " " + human_bytes(b);
  row("by type", types.empty() ? "(no tensors)" : types);
  if (m.general_type == "adapter") {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%g", m.lora_alpha);
    row("adapter", m.adapter_type + ", alpha " + alpha + ", rank " + n(m.lora_rank) + ", " +
                       n(m.lora_targets.size()) + " target tensors");
    std::string targets;
    for (std::size_t i = 0; i < m.lora_targets.size() && i < 8; ++i) targets += (i ? ", " : "") + m.lora_targets[i];
    if (m.lora_targets.size() > 8) targets += ", ...";
    row("targets", targets);
  }
}

}  // namespace

void add_inspect(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("inspect", "summarise a GGUF model or adapter file");
  struct Opts {
    std::string file;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  sub->add_option("file", opts->file, "GGUF file")->required();
  sub->add_flag("--json", opts->json, "print JSON instead of text");
  sub->callback([&g, opts] {
    auto m = gguf::inspect(opts->file);
    if (!m) {
      std::cerr << "kevlaya-orch inspect: " << m.error().message << "\n";
      g.exit_code = kExitFailure;
      return;
    }
    if (opts->json) {
      std::cout << dump_json(to_json(*m), 2) << "\n";
    } else {
      print_text(*m);
    }
    g.exit_code = kExitOk;
  });
}

}  // namespace kevlaya::cli
