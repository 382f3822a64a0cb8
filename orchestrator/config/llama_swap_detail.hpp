// Internals of the llama-swap import shared by its two files; not for other modules.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::config::swap {

// Macros in definition order (a value may use the ones before it).
using Macros = std::vector<std::pair<std::string, std::string>>;

// `${name}` replaced: `${env.X}` by the reference `${X}` (never the value: it may be a secret),
// `${MODEL_ID}` by `model_id`, a macro by its value; `${PORT}` and `${PID}` stay (the caller maps
// them). Each unknown macro, and each variable unset here, is added to `bad`.
std::string expand(const std::string& text, const Macros& macros, const std::string& model_id,
                   std::vector<std::string>& bad);

// `text` with each `${env.VAR}` written as `${VAR}` (the loader's reference); `vars` gets each VAR.
// A scan, not a regex: a long name cannot exhaust the stack.
std::string env_references(const std::string& text, std::vector<std::string>* vars = nullptr);

// A whole number (llama-swap's own loader refuses anything else; the report says so), or nullopt.
std::optional<int> parse_int(const std::string& s);

// Fills `p` from the words of a model's cmd: llama-server's flags through the flag table (the
// other words to extra_args), any other program as a `command` profile. `notes`: each word that
// was dropped and why. Relative paths are resolved against `base`.
void map_command(const std::vector<std::string>& words, const fs::path& base, Profile& p,
                 std::vector<std::string>& notes);

}  // namespace kevlaya::config::swap
