#include "support/proc_probes.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/paths.hpp"
#include "supervisor/state_file.hpp"

namespace kevlaya::test {

namespace fs = std::filesystem;

namespace {

// Fields of /proc/PID/stat after the command (which may contain spaces and parentheses).
std::vector<std::string> stat_fields(pid_t pid) {
  const std::string s = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto close = s.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream in(s.substr(close + 2));
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  return f;  // [0] = state, [1] = ppid
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const auto name = e.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

long status_value(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

}  // namespace

std::vector<int> pids_with_arg(const std::string& needle) {
  std::vector<int> out;
  for (pid_t pid : all_pids()) {
    for (const auto& a : supervisor::proc_cmdline(pid)) {
      if (a.find(needle) != std::string::npos) {
        if (alive(pid)) out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

int group_leaders_with_arg(const std::string& needle) {
  int n = 0;
  for (int pid : pids_with_arg(needle)) n += ::getpgid(pid) == pid ? 1 : 0;
  return n;
}

bool alive(int pid) {
  const std::string s = supervisor::read_proc(pid, "stat");
  auto close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) return false;
  char state = s[close + 2];
  return state != 'Z' && state != 'X';
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t p : all_pids()) {
    const auto f = stat_fields(p);
    if (f.size() > 1 && std::stol(f[1]) == parent) out.push_back(p);
  }
  return out;
}

std::vector<pid_t> zombie_children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t p : children_of(parent)) {
    const auto f = stat_fields(p);
    if (!f.empty() && f[0] == "Z") out.push_back(p);
  }
  return out;
}

int fd_count(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

double cpu_seconds(pid_t pid) {
  const auto f = stat_fields(pid);  // [11] utime, [12] stime (fields 14 and 15 of stat)
  // Thrown, not a sentinel: a bound checked against -1 would pass for a process that is gone.
  if (f.size() < 13) throw std::runtime_error("no CPU times in /proc/" + std::to_string(pid) + "/stat");
  return static_cast<double>(std::stoll(f[11]) + std::stoll(f[12])) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long rss_kib(pid_t pid) { return status_value(pid, "VmRSS"); }
long peak_rss_kib(pid_t pid) { return status_value(pid, "VmHWM"); }
int thread_count(pid_t pid) { return static_cast<int>(status_value(pid, "Threads")); }

std::vector<pid_t> processes_with_env(const std::string& marker) {
  std::vector<pid_t> out;
  for (pid_t p : all_pids()) {
    if (p == ::getpid()) continue;
    const std::string env = read_text("/proc/" + std::to_string(p) + "/environ");
    std::size_t start = 0;
    while (start < env.size()) {
      const auto end = env.find('\0', start);
      if (env.compare(start, (end == std::string::npos ? env.size() : end) - start, marker) == 0) {
        out.push_back(p);
        break;
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return out;
}

int close_wait_on(int port) {
  int n = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state;
      row >> slot >> local >> remote >> state;
      const auto colon = local.rfind(':');
      if (colon == std::string::npos || state != "08") continue;  // 08: CLOSE_WAIT
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) ++n;
    }
  }
  return n;
}

}  // namespace kevlaya::test
