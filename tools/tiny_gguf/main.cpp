// kevlaya-tiny-gguf: writes tiny, valid llama-architecture GGUF models and LoRA adapters
// (seeded random weights) that the real llama-server loads. Used for stand-ins and benchmarks.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf.hpp"
#include "gguf/writer.hpp"

namespace gg = kevlaya::gguf;

namespace {

int report(const kevlaya::Status& s, const std::filesystem::path& out) {
  if (!s) {
    std::cerr << "kevlaya-tiny-gguf: " << s.error().message << "\n";
    return 1;
  }
  std::cout << "wrote " << out.string() << " (" << std::filesystem::file_size(out) << " bytes)\n";
  return 0;
}

void add_dims(CLI::App* sub, gg::TinyModelSpec& s, const std::string& prefix) {
  sub->add_option("--" + prefix + "n-embd", s.n_embd, "embedding length")->capture_default_str();
  sub->add_option("--" + prefix + "n-layer", s.n_layer, "block count")->capture_default_str();
  sub->add_option("--" + prefix + "n-head", s.n_head, "attention heads")->capture_default_str();
  sub->add_option("--" + prefix + "n-head-kv", s.n_head_kv, "KV heads")->capture_default_str();
  sub->add_option("--" + prefix + "n-ff", s.n_ff, "feed-forward length")->capture_default_str();
  sub->add_option("--" + prefix + "n-vocab", s.n_vocab, "vocabulary size (>= 260)")->capture_default_str();
}

// The base dims for an adapter: from an existing model file when --base is given.
kevlaya::Status base_from_file(const std::filesystem::path& file, gg::TinyModelSpec& s) {
  auto m = gg::inspect(file);
  if (!m) return m.error();
  s.n_embd = m->n_embd;
  s.n_layer = m->n_layer;
  s.n_head = m->n_head;
  s.n_head_kv = m->n_head_kv;
  s.n_ff = m->n_ff;
  s.n_vocab = m->n_vocab;
  s.n_ctx_train = m->n_ctx_train;
  s.name = m->name;
  return kevlaya::ok_status();
}

// A JSON array of strings: the model's user tokens (see TinyModelSpec::user_tokens).
kevlaya::Status read_user_tokens(const std::filesystem::path& file, std::vector<std::string>& out) {
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!in || j.is_discarded() || !j.is_array())
    return kevlaya::make_error(kevlaya::Errc::bad_request, file.string() + ": expected a JSON array of strings");
  for (const auto& t : j) {
    if (!t.is_string())
      return kevlaya::make_error(kevlaya::Errc::bad_request, file.string() + ": expected a JSON array of strings");
    out.push_back(t.get<std::string>());
  }
  return kevlaya::ok_status();
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// kev-tiny + laya-tiny + two adapters for Kev: the stand-in models of the project.
int standins(const std::filesystem::path& dir) {
  auto files = gg::write_standins(dir);
  if (!files) return report(files.error(), dir);
  for (const auto& p : {files->kev, files->laya, files->kev_lora_a, files->kev_lora_b}) report(kevlaya::ok_status(), p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kevlaya-tiny-gguf: write tiny llama GGUF models and LoRA adapters"};
  app.require_subcommand(1);
  int rc = 0;

  gg::TinyModelSpec model;
  std::filesystem::path model_out;
  bool f16 = false;
  std::uint64_t big_mib = 0;
  std::filesystem::path user_tokens;
  bool no_bos = false, no_space_prefix = false;
  auto* m = app.add_subcommand("model", "write a llama model");
  m->add_option("--out", model_out, "output file")->required();
  add_dims(m, model, "");
  m->add_option("--n-ctx", model.n_ctx_train, "training context length")->capture_default_str();
  m->add_option("--seed", model.seed, "weight seed")->capture_default_str();
  m->add_option("--name", model.name, "general.name")->capture_default_str();
  m->add_flag("--f16", f16, "F16 weights (default F32)");
  m->add_option("--user-tokens", user_tokens, "JSON array of whole-string tokens (task vocabulary)")
      ->check(CLI::ExistingFile);
  m->add_option("--eos-text", model.eos_text, "make this user token the EOS (e.g. <|im_end|>)");
  m->add_option("--output-scale", model.output_scale, "output.weight values in ±this")->capture_default_str();
  m->add_flag("--no-bos", no_bos, "tokenizer.ggml.add_bos_token = false");
  m->add_flag("--no-space-prefix", no_space_prefix, "tokenizer.ggml.add_space_prefix = false");
  m->add_option("--big-mib", big_mib, "ignore the dims: an F16 model of about N MiB (benchmarks)");
  m->callback([&] {
    if (big_mib > 0) {
      const std::string name = model.name;
      model = gg::big_model_spec(big_mib, model.seed);
      if (m->count("--name")) model.name = name;
    } else if (f16) {
      model.tensor_type = 1;
    }
    model.add_bos = !no_bos;
    model.add_space_prefix = !no_space_prefix;
    if (!user_tokens.empty()) {
      if (auto st = read_user_tokens(user_tokens, model.user_tokens); !st) {
        rc = report(st, model_out);
        return;
      }
    }
    rc = report(gg::write_tiny_model(model_out, model), model_out);
  });

  gg::TinyModelSpec base;
  gg::TinyLoraSpec lora;
  std::filesystem::path lora_out, base_file;
  std::string targets = "attn_q,attn_v";
  auto* l = app.add_subcommand("lora", "write a LoRA adapter for a base model");
  l->add_option("--out", lora_out, "output file")->required();
  l->add_option("--base", base_file, "base model GGUF (its dims override --base-n-*)")->check(CLI::ExistingFile);
  add_dims(l, base, "base-");
  l->add_option("--rank", lora.rank, "LoRA rank")->capture_default_str();
  l->add_option("--alpha", lora.alpha, "adapter.lora.alpha")->capture_default_str();
  l->add_option("--targets", targets, "comma-separated per-layer weights")->capture_default_str();
  l->add_option("--seed", lora.seed, "weight seed")->capture_default_str();
  l->callback([&] {
    lora.targets = split_csv(targets);
    kevlaya::Status s = base_file.empty() ? kevlaya::ok_status() : base_from_file(base_file, base);
    rc = report(s ? gg::write_tiny_lora(lora_out, base, lora) : s, lora_out);
  });

  std::filesystem::path dir;
  auto* st = app.add_subcommand("standins", "write kev-tiny, laya-tiny and two Kev adapters");
  st->add_option("--dir", dir, "output folder")->required();
  st->callback([&] { rc = standins(dir); });

  CLI11_PARSE(app, argc, argv);
  return rc;
}
