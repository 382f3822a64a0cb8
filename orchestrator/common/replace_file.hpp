// Replacing a small file whole or not at all (state and calibration files).
#pragma once
#include <filesystem>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya {

// Writes `text` to `path`.tmp, fsyncs it, and renames it over `path`: `path` holds the old content
// or the whole new one, never a part (a write cut by a full disk leaves the old). On any failure the
// temporary file is removed and the error (io_error) names the step and the system's reason.
Status replace_file(const std::filesystem::path& path, std::string_view text);

}  // namespace kevlaya
