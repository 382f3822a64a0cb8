// `import llama-swap`: a llama-swap config.yaml -> kevlaya.yaml and profiles (docs/from-llama-swap.md).
// Each model's `cmd` (macros expanded) is read through the one flag table into typed profile keys,
// the other words kept as extra_args; a server that is not llama-server becomes a `command` profile.
// Everything without a kevlaya equivalent is reported with its source line, never dropped silently.
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::config {

struct SwapImport {
  std::vector<Profile> profiles;          // one per model (and per peer model), config order
  std::string orchestrator_yaml;          // kevlaya.yaml text (profiles_dir: profiles)
  std::vector<Diagnostic> report;         // warnings: what was not mapped (or only approximately), and why
  std::vector<Diagnostic> errors;         // the file is not a usable llama-swap config: nothing to write
  // Each VAR of a `${env.VAR}` in the file: written as the reference ${VAR} (read when kevlaya-orch
  // loads the profile), never as the value the importing shell had.
  std::vector<std::string> env_refs;
};

// Reads `file` (a llama-swap config.yaml). Relative model paths are made absolute against its folder.
// Profile names are distinct (case-insensitively: they are file names): an id that cleans to an
// earlier profile's name gets -2, -3, ...; one with nothing left (`..`) is model-N; both reported.
SwapImport import_llama_swap(const fs::path& file);

// profile_yaml(p) with each of im.env_refs kept a ${VAR} reference (profile_yaml escapes "${").
std::string imported_profile_yaml(const Profile& p, const SwapImport& im);

// The words of a llama-swap `cmd` string: `#` comment lines dropped, quotes and backslashes as a
// POSIX shell reads them (no expansion), line continuations joined.
std::vector<std::string> split_command(const std::string& cmd);

// A name kevlaya accepts ([A-Za-z0-9][A-Za-z0-9._-]*) from a llama-swap model id: other bytes -> '-'.
std::string profile_name_from_id(const std::string& id);

}  // namespace kevlaya::config
