// State files: one JSON file per running child in state_dir, so that a later run can kill children
// left behind by a crashed orchestrator (PDEATHSIG covers most cases; this covers the rest).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kevlaya::supervisor {

struct ChildRecord {
  int pid = 0;
  int pgid = 0;
  unsigned long long start_time = 0;  // /proc/PID/stat field 22 (clock ticks since boot)
  std::string profile;
  std::vector<std::string> argv;
};

// Field 22 of /proc/PID/stat, 0 when the process does not exist.
unsigned long long proc_start_time(int pid);
// /proc/PID/cmdline split at NULs; empty when the process does not exist.
std::vector<std::string> proc_cmdline(int pid);

// Writes dir/<profile>-<pid>.json (atomically via rename). Returns false on I/O error.
bool write_state(const std::filesystem::path& dir, const ChildRecord& rec);
void remove_state(const std::filesystem::path& dir, const ChildRecord& rec);

// Kills (SIGKILL to the group) every leftover child recorded in `dir` whose pid still runs the
// recorded argv with the recorded start time (a reused pid is never hit); removes the files.
// Returns the number of process groups killed.
int reap_stale(const std::filesystem::path& dir);

}  // namespace kevlaya::supervisor
