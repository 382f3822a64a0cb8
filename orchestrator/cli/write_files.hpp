// Writing a generated configuration (init, import): every file or none, never over an existing one
// unless forced.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kevlaya::cli {

using Files = std::vector<std::pair<std::string, std::string>>;  // path relative to the folder, text

// Writes `files` under `dir` (folders created). Refuses (stderr, nothing written) when one exists
// and `force` is false. Prints each path written. `cmd` names the command in messages.
bool write_files(const std::filesystem::path& dir, const Files& files, bool force, const char* cmd);

}  // namespace kevlaya::cli
