#include "supervisor/state_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "config/config.hpp"
#include "config/flags.hpp"
#include "common/bytes.hpp"
#include "common/hash.hpp"
#include "common/replace_file.hpp"

namespace kevlaya::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr auto kGoneWait = std::chrono::milliseconds(2000);
constexpr auto kGonePoll = std::chrono::milliseconds(10);

// A file name holds at most 255 bytes: a longer profile name is cut and ends in 8 hex digits of
// its hash (the record inside keeps the whole name); any '/' would name a folder, so it is '-'.
constexpr std::size_t kMaxProfilePart = 128;

fs::path file_for(const fs::path& dir, const ChildRecord& rec) {
  std::string part = rec.profile;
  std::replace(part.begin(), part.end(), '/', '-');
  if (part.empty() || part == "." || part == "..") part = "child";
  if (part.size() > kMaxProfilePart) part = part.substr(0, kMaxProfilePart - 9) + "-" + hex16(fnv1a(rec.profile)).substr(0, 8);
  return dir / (part + "-" + std::to_string(rec.pid) + ".json");
}

// Fields of /proc/PID/stat after the "(comm)" part; empty when absent.
std::vector<std::string> stat_fields(int pid) {
  const std::string s = read_proc(pid, "stat");
  auto close = s.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(s.substr(close + 1));
  std::vector<std::string> out;
  for (std::string f; rest >> f;) out.push_back(f);
  return out;  // out[0] = state (field 3), out[19] = starttime (field 22)
}

bool gone_or_zombie(int pid) {
  auto f = stat_fields(pid);
  return f.empty() || f[0] == "Z" || f[0] == "X";
}

}  // namespace

std::string read_proc(int pid, const char* what) {
  // Plain read(2): a process that exits while an ifstream reads it makes libstdc++'s filebuf
  // throw (read fails with ESRCH); here that is just "gone".
  const std::string path = "/proc/" + std::to_string(pid) + "/" + what;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

unsigned long long proc_start_time(int pid) {
  if (pid <= 0) return 0;
  auto f = stat_fields(pid);
  if (f.size() <= 19) return 0;
  try {
    return std::stoull(f[19]);
  } catch (const std::exception&) {
    return 0;
  }
}

std::vector<std::string> mask_secrets(std::vector<std::string> argv) {
  for (const auto& use : config::scan_flags(argv)) {
    if (use.flag->key != "api_key" || !use.value) continue;
    std::string& word = argv[use.index];
    const auto eq = word.find('=');
    if (eq != std::string::npos) word = word.substr(0, eq + 1) + std::string(config::kChildKeyPlaceholder);
    else if (use.index + 1 < argv.size()) argv[use.index + 1] = std::string(config::kChildKeyPlaceholder);
  }
  return argv;
}

std::vector<std::string> proc_cmdline(int pid) {
  const std::string s = read_proc(pid, "cmdline");
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Status write_state(const fs::path& dir, const ChildRecord& rec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const int owner = rec.owner_pid ? rec.owner_pid : ::getpid();
  const auto owner_start = rec.owner_pid ? rec.owner_start_time : proc_start_time(owner);
  json argv = json::array();  // paths are bytes: each element round-trips (common/bytes.hpp)
  for (const auto& a : mask_secrets(rec.argv)) argv.push_back(bytes_to_json(a));
  json j = {{"pid", rec.pid},         {"pgid", rec.pgid},        {"start_time", rec.start_time},
            {"profile", bytes_to_json(rec.profile)}, {"argv", argv},
            {"owner_pid", owner},     {"owner_start_time", owner_start}};
  return replace_file(file_for(dir, rec), dump_json(j) + "\n");
}

void remove_state(const fs::path& dir, const ChildRecord& rec) {
  std::error_code ec;
  fs::remove(file_for(dir, rec), ec);
}

namespace {

// The running command is the recorded one: the same argv, or (a wrapper that exec'd the server
// through a loader, like tools/llama-server/fetch.sh's: `ld.so --library-path L /usr/bin/llama-server
// ARGS`) the recorded arguments after argv[0] end the running argv. With the start time also equal,
// a reused pid cannot pass.
bool same_command(const std::vector<std::string>& running, const std::vector<std::string>& recorded) {
  if (running == recorded) return true;
  if (recorded.size() < 2 || running.size() < recorded.size()) return false;
  return std::equal(recorded.begin() + 1, recorded.end(), running.end() - (recorded.size() - 1));
}

bool kill_if_ours(const ChildRecord& rec) {
  if (rec.pid <= 1 || rec.pgid <= 1) return false;
  // A reused pid runs something else or started at another time: leave it alone.
  if (proc_start_time(rec.pid) != rec.start_time || !same_command(mask_secrets(proc_cmdline(rec.pid)), rec.argv))
    return false;
  spdlog::warn("killing leftover child of a previous run: profile {} pid {}", rec.profile, rec.pid);
  ::kill(-rec.pgid, SIGKILL);
  auto until = std::chrono::steady_clock::now() + kGoneWait;
  while (!gone_or_zombie(rec.pid) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(kGonePoll);  // not our child: no exit event to await
  return true;
}

// A state file of ours by its name alone: "<profile>-<pid>.json".
bool record_name(const fs::path& p) {
  static const std::regex re(".+-[0-9]+\\.json");
  return std::regex_match(p.filename().string(), re);
}

// What a regular file named like a record holds: a record, JSON of someone else's (left alone), or
// no JSON at all (empty or cut short: an older version wrote it so on a full disk).
struct ReadRecord {
  std::optional<ChildRecord> rec;
  bool broken = false;
};

std::optional<ChildRecord> to_record(const json& j) {
  if (!j.is_object() || !j.contains("pid") || !j.contains("argv")) return std::nullopt;
  try {
    ChildRecord rec;
    rec.pid = j.value("pid", 0);
    rec.pgid = j.value("pgid", 0);
    rec.start_time = j.value("start_time", 0ULL);
    rec.profile = bytes_from_json(j.value("profile", json())).value_or("");
    for (const auto& a : j.value("argv", json::array())) rec.argv.push_back(bytes_from_json(a).value_or(""));
    rec.owner_pid = j.value("owner_pid", 0);
    rec.owner_start_time = j.value("owner_start_time", 0ULL);
    return rec;
  } catch (const json::exception&) {
    return std::nullopt;  // a field of another type: not a record we wrote
  }
}

ReadRecord read_record(const fs::path& path) {
  std::ifstream in(path);
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return {to_record(j), j.is_discarded()};
}

// The recorded orchestrator still runs (same pid, same start time) and is not us.
bool owner_alive(const ChildRecord& rec) {
  if (rec.owner_pid <= 0 || rec.owner_pid == ::getpid()) return false;
  const auto t = proc_start_time(rec.owner_pid);
  return t != 0 && t == rec.owner_start_time && !gone_or_zombie(rec.owner_pid);
}

}  // namespace

int reap_stale(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int killed = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type;
    if (!record_name(it->path()) || !fs::is_regular_file(it->path(), type)) continue;  // not ours
    const auto [rec, broken] = read_record(it->path());
    if (broken) {  // records are written whole or not at all now: this one can tell nothing
      spdlog::warn("state dir: ignoring and removing {}: empty or cut short, not a child record",
                   it->path().string());
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
    if (!rec) continue;
    if (owner_alive(*rec)) {
      spdlog::info("state dir: profile {} pid {} belongs to running orchestrator pid {}; left alone",
                   rec->profile, rec->pid, rec->owner_pid);
      continue;
    }
    if (kill_if_ours(*rec)) ++killed;
    std::error_code rm;
    fs::remove(it->path(), rm);
  }
  return killed;
}

}  // namespace kevlaya::supervisor
