// One orchestrator per state directory: an exclusive flock(2) on <state_dir>/kevlaya-orch.lock,
// held for the life of the process (the kernel drops it when the process dies, however it dies).
// The file holds the holder's pid so a refused instance can say who holds the directory.
#pragma once
#include <filesystem>

#include "common/error.hpp"
#include "common/fd.hpp"

namespace kevlaya::runtime {

class StateLock {
 public:
  // Creates `state_dir` if needed and takes the lock without waiting. Errc::unavailable naming
  // the holder's pid when another process holds it; Errc::io_error when the file cannot be opened.
  static Result<StateLock> acquire(const std::filesystem::path& state_dir);

  // No lock (no state_dir configured).
  static StateLock none() { return StateLock(-1); }

  static constexpr const char* kFileName = "kevlaya-orch.lock";

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  UniqueFd fd_;  // moved, never copied; closing it releases the lock (the file stays; its content is only informative)
};

}  // namespace kevlaya::runtime
