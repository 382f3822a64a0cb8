// The one table of llama-server flags kevlaya-orch knows (b10470 spellings). build_argv writes the
// profile- and orchestrator-owned ones from it, profile validation judges extra_args by it, and the
// ledger reads the user-owned flags that change the memory bill through it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya::config {

enum class FlagOwner {
  profile,       // written from a profile key; repeating it in extra_args is a warning
  orchestrator,  // chosen per spawn by kevlaya-orch; setting it in extra_args is an error
  user,          // only in extra_args (kevlaya-orch may read it, or write a default)
};

enum class FlagValue { none, integer, text, path };

struct LlamaFlag {
  std::string_view name;                  // the spelling build_argv writes
  std::vector<std::string_view> aliases;  // other spellings llama-server accepts
  FlagOwner owner;
  FlagValue value;
  std::string_view key;  // profile key (owner profile) or what kevlaya-orch uses it for
};

// Every flag in the table, in build_argv's order for the ones it writes.
const std::vector<LlamaFlag>& llama_flags();

// The entry whose name or alias is `word` (a trailing "=value" is ignored); nullptr if unknown.
const LlamaFlag* find_flag(std::string_view word);

// One known flag found in an argument list.
struct FlagUse {
  const LlamaFlag* flag = nullptr;
  std::size_t index = 0;             // of the flag word in the list
  std::optional<std::string> value;  // "--x=v" or the next word, for flags that take a value
};

// The table's flags in `args`, in order; a flag's value word is skipped, unknown words are too.
std::vector<FlagUse> scan_flags(const std::vector<std::string>& args);

// True when `args` uses a flag of the table whose key is `key` (any spelling).
bool uses_key(const std::vector<std::string>& args, std::string_view key);

// The spelling build_argv writes for the entry with `key` (the first one with that key).
std::string_view flag_name(std::string_view key);

}  // namespace kevlaya::config
