// Writing configuration back as YAML (`init`, `import llama-swap`): a profile document with the
// keys that differ from their defaults, in the order docs/configuration.md lists them. The text
// loads back (config::load) into the same Profile.
#pragma once
#include <string>

#include "config/config.hpp"

namespace kevlaya::config {

// One profile document (name included). `header`: comment lines put first (without '#').
std::string profile_yaml(const Profile& p, const std::string& header = {});

// A YAML scalar for `s`, quoted when plain style would change its meaning ("on", "1", "a: b"), and
// "${" written "$${" (the loader expands ${VAR}). Profile strings are escaped the same way, except a
// remote's api_key, which may be a ${VAR} reference.
std::string yaml_scalar(const std::string& s);

}  // namespace kevlaya::config
