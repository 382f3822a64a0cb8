// State files: one JSON file per running child in state_dir, so that a later run can kill children
// left behind by a crashed orchestrator (PDEATHSIG covers most cases; this covers the rest).
// Each record names the orchestrator that started the child; a child whose orchestrator still
// runs is never touched (runtime/state_lock.hpp also keeps a second instance off the directory).
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::supervisor {

struct ChildRecord {
  ChildRecord() = default;
  ChildRecord(int pid_, int pgid_, unsigned long long start, std::string profile_, std::vector<std::string> argv_,
              int owner = 0, unsigned long long owner_start = 0)
      : pid(pid_), pgid(pgid_), start_time(start), profile(std::move(profile_)), argv(std::move(argv_)),
        owner_pid(owner), owner_start_time(owner_start) {}
  int pid = 0;
  int pgid = 0;
  unsigned long long start_time = 0;  // /proc/PID/stat field 22 (clock ticks since boot)
  std::string profile;
  std::vector<std::string> argv;  // secrets masked (mask_secrets)
  int owner_pid = 0;              // the orchestrator that started it (0 in records of old versions)
  unsigned long long owner_start_time = 0;
};

// `argv` with the value of every secret flag of the flag table (--api-key) replaced by a
// placeholder: what state files record and compare against /proc/PID/cmdline.
std::vector<std::string> mask_secrets(std::vector<std::string> argv);

// The bytes of /proc/PID/<what>; empty when the process does not exist (or exits while read).
std::string read_proc(int pid, const char* what);
// Field 22 of /proc/PID/stat, 0 when the process does not exist.
unsigned long long proc_start_time(int pid);
// /proc/PID/cmdline split at NULs; empty when the process does not exist.
std::vector<std::string> proc_cmdline(int pid);

// Writes dir/<profile>-<pid>.json whole or not at all (common/replace_file.hpp), owner = this
// process when unset. The error names the reason (e.g. no space left on device).
Status write_state(const std::filesystem::path& dir, const ChildRecord& rec);
void remove_state(const std::filesystem::path& dir, const ChildRecord& rec);

// Kills (SIGKILL to the group) every leftover child recorded in `dir` whose orchestrator is gone
// and whose pid still runs the recorded argv with the recorded start time (a reused pid is never
// hit), and removes those records. Touches only files named like a record (<profile>-<pid>.json,
// a regular file holding a record); records of a live orchestrator stay; one that is not JSON at
// all (empty or cut short: an older version wrote it so on a full disk) is removed with a warning.
// Never throws.
// Returns the number of process groups killed.
int reap_stale(const std::filesystem::path& dir);

}  // namespace kevlaya::supervisor
