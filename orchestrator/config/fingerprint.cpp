#include "config/fingerprint.hpp"

#include <map>

#include "config/backend.hpp"
#include "config/flags.hpp"

namespace kevlaya::config {

namespace {

// The group of flags where the last one wins: -kvu and -no-kvu undo each other.
std::string_view group_of(std::string_view key) { return key == "no_kv_unified" ? "kv_unified" : key; }

// Dropped from every fingerprint: per spawn, and placeholders in child_argv anyway.
bool per_spawn(std::string_view key) { return key == "host" || key == "port"; }

// What makes one member of a shared base differ from another: its adapters and its name.
bool per_member(std::string_view key) { return key == "lora" || key == "name"; }

// A llama-server argv (without the binary) as llama-server reads it: one word per flag group holding
// its last value, sorted (where a flag was written does not matter); LoRA words in order (they add
// up); then the words the table does not know, as written.
std::vector<std::string> canonical_args(const std::vector<std::string>& args, FingerprintScope scope) {
  std::map<std::string_view, std::string> last;
  std::vector<std::string> loras, rest;
  std::vector<bool> known(args.size(), false);
  for (const auto& use : scan_flags(args)) {
    known[use.index] = true;
    if (use.value && args[use.index].find('=') == std::string::npos) known[use.index + 1] = true;
    const std::string_view key = use.flag->key;
    if (per_spawn(key) || (scope == FingerprintScope::base && per_member(key))) continue;
    std::string word = std::string(use.flag->name) + (use.value ? "=" + *use.value : "");
    if (key == "lora") {
      loras.push_back(std::move(word));
      continue;
    }
    last.insert_or_assign(group_of(key), std::move(word));
  }
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!known[i]) rest.push_back(args[i]);
  std::vector<std::string> out;
  for (const auto& [group, word] : last) out.push_back(word);
  out.insert(out.end(), loras.begin(), loras.end());
  out.emplace_back("--");  // a separator: what follows is unknown to the table, kept as written
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace

std::vector<std::string> child_argv(const Profile& p) { return build_argv(p, SpawnArgs{"HOST", "PORT", {}, {}}); }

std::string fingerprint(const Profile& p, FingerprintScope scope) {
  if (scope == FingerprintScope::base && !p.placement.devices.empty()) {
    Profile unplaced = p;  // a shared base is placed after grouping: its members' `gpu:` decides
    unplaced.placement = {};
    return fingerprint(unplaced, scope);
  }
  std::vector<std::string> words = {"backend=" + std::string(backend_of(p).name)};
  const auto argv = child_argv(p);
  if (p.backend == Backend::llama_server && !argv.empty()) {
    words.push_back(argv.front());
    const auto args = canonical_args({argv.begin() + 1, argv.end()}, scope);
    words.insert(words.end(), args.begin(), args.end());
  } else {
    words.insert(words.end(), argv.begin(), argv.end());
  }
  std::map<std::string, std::string> env = p.env;  // as child_env builds it: the placement decides last
  for (const auto& [k, v] : placement_env(p.placement)) env[k] = v;
  words.emplace_back("--env");
  for (const auto& [k, v] : env) words.push_back(k + "=" + v);
  return shell_join(words);
}

std::string child_key(const Profile& p) {
  std::string k = fingerprint(p);
  k += "|url=" + p.url + "|command=" + shell_join(p.command);  // the template itself, not only its filling
  k += "|port=" + (p.port ? std::to_string(*p.port) : std::string("-"));
  const auto& h = p.health;
  k += "|health=" + h.path + "," + std::to_string(h.first_probe_ms) + "," + std::to_string(h.interval_ms) + "," +
       std::to_string(h.probe_timeout_ms) + "," + std::to_string(h.startup_timeout_s) + "," +
       std::to_string(h.stall_timeout_s);
  k += "|grace=" + std::to_string(p.stop.grace_s);
  k += "|slots=" + std::to_string(p.slot_cache.enabled) + "," + std::to_string(p.slot_cache.max_bytes);
  return k;
}

}  // namespace kevlaya::config
