// Files the CLI and the configuration name are read whole, so each read is bounded: a regular file
// only (opened without blocking: a FIFO, a device such as /dev/zero or a socket is refused at
// once, never waited on nor read forever), and at most a stated number of bytes (docs/security.md).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "common/error.hpp"

namespace kevlaya {

inline constexpr std::uint64_t kMaxConfigFileBytes = 1ULL << 20;  // a YAML file, a key file
inline constexpr std::uint64_t kMaxTaskFileBytes = 256ULL << 20;  // run --input-file, eval --scenarios

// The whole of `path`, or an Errc::io_error saying why, without the path (the caller names it):
// "file not found", "a FIFO, not a regular file", "N bytes, more than the M-byte limit for `what`".
Result<std::string> read_bounded_file(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& what);

// The bytes of the file at `path` from offset `from` (0 when the file is now shorter: rotated),
// at most the last `max_bytes` of them; empty when it cannot be read. For a child's log.
std::string read_file_tail(const std::filesystem::path& path, std::uint64_t from, std::uint64_t max_bytes);

// What `st_mode` is, in words ("a FIFO", "a directory", "a character device", ...).
std::string file_kind(unsigned mode);

}  // namespace kevlaya
