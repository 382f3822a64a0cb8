#include "config/flags.hpp"

#include <algorithm>

namespace kevlaya::config {

const std::vector<LlamaFlag>& llama_flags() {
  using O = FlagOwner;
  using V = FlagValue;
  // clang-format off
  static const std::vector<LlamaFlag> table = {
      {"-m",     {"--model"},                         O::profile, V::path,    "model"},
      {"-ngl",   {"--gpu-layers", "--n-gpu-layers"},  O::profile, V::text,    "ngl"},  // a number or "all"
      {"-c",     {"--ctx-size"},                      O::profile, V::integer, "ctx"},
      {"-np",    {"--parallel"},                      O::profile, V::integer, "parallel"},
      {"--host", {},                                  O::orchestrator, V::text,    "host"},
      {"--port", {},                                  O::orchestrator, V::integer, "port"},
      {"--alias", {"-a"},                             O::profile, V::text,    "name"},
      {"-b",     {"--batch-size"},                    O::profile, V::integer, "batch"},
      {"-ctk",   {"--cache-type-k"},                  O::profile, V::text,    "cache_type_k"},
      {"-ctv",   {"--cache-type-v"},                  O::profile, V::text,    "cache_type_v"},
      {"-fa",    {"--flash-attn"},                    O::profile, V::text,    "flash_attn"},
      {"--lora-scaled", {},                           O::profile, V::text,    "lora"},
      {"--lora", {},                                  O::profile, V::path,    "lora"},
      {"--slot-save-path", {},                        O::orchestrator, V::path, "slot_cache"},
      {"--api-key", {},                               O::orchestrator, V::text, "api_key"},
      {"--api-key-file", {},                          O::orchestrator, V::path, "api_key"},
      // The GPU placement (ledger/placement.hpp): which devices the child sees and how a split divides.
      {"--main-gpu", {"-mg"},                         O::orchestrator, V::integer, "main_gpu"},
      {"--tensor-split", {"-ts"},                     O::orchestrator, V::text, "tensor_split"},
      {"--device", {"-dev"},                          O::orchestrator, V::text, "device"},
      // Calibration reads the load log at verbosity 4 (the default written when none of these is set).
      {"-lv",    {"--verbosity", "--log-verbosity"},  O::user, V::integer, "verbosity"},
      {"-v",     {"--verbose", "--log-verbose"},      O::user, V::none,    "verbosity"},
      {"--log-disable", {},                           O::user, V::none,    "verbosity"},
      // The door's /metrics carries each child's own (the default written when absent).
      {"--metrics", {},                               O::user, V::none,    "metrics"},
      // Read by the ledger: they change the compute and KV buffers.
      {"-ub",    {"--ubatch-size"},                   O::user, V::integer, "ubatch"},
      {"-kvu",   {"--kv-unified"},                    O::user, V::none,    "kv_unified"},
      {"-no-kvu", {"--no-kv-unified"},                O::user, V::none,    "no_kv_unified"},
  };
  // clang-format on
  return table;
}

const LlamaFlag* find_flag(std::string_view word) {
  const std::string_view name = word.substr(0, word.find('='));
  for (const auto& f : llama_flags())
    if (f.name == name || std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
  return nullptr;
}

std::vector<FlagUse> scan_flags(const std::vector<std::string>& args) {
  std::vector<FlagUse> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const LlamaFlag* f = find_flag(args[i]);
    if (!f) continue;
    FlagUse use{f, i, std::nullopt};
    const auto eq = args[i].find('=');
    if (f->value != FlagValue::none) {
      if (eq != std::string::npos) use.value = args[i].substr(eq + 1);
      else if (i + 1 < args.size()) use.value = args[++i];
    }
    out.push_back(std::move(use));
  }
  return out;
}

bool uses_key(const std::vector<std::string>& args, std::string_view key) {
  const auto uses = scan_flags(args);
  return std::any_of(uses.begin(), uses.end(), [&](const FlagUse& u) { return u.flag->key == key; });
}

std::string_view flag_name(std::string_view key) {
  for (const auto& f : llama_flags())
    if (f.key == key) return f.name;
  return {};  // a key missing from the table is a bug caught by the argv golden tests
}

}  // namespace kevlaya::config
