#include "supervisor/support.hpp"

#include <unistd.h>

#include <fstream>

#include "supervisor/state_file.hpp"

namespace kevlaya::test {

namespace fs = std::filesystem;

config::Profile fast_profile(const std::string& name, const std::string& binary, const fs::path& model,
                             std::vector<std::string> extra) {
  config::Profile p;
  p.name = name;
  p.binary = binary;
  p.model = model;
  p.ctx = 256;
  p.ngl = 0;
  p.parallel = 1;
  p.extra_args = std::move(extra);
  p.health.first_probe_ms = 10;
  p.health.interval_ms = 20;
  p.health.probe_timeout_ms = 500;
  p.health.startup_timeout_s = 20;
  p.health.stall_timeout_s = 20;
  p.stop.grace_s = 5;
  p.restart.backoff_initial_ms = 20;
  p.restart.backoff_max_s = 1;
  p.restart.max_restarts = 5;
  p.restart.window_s = 60;
  p.restart.cooldown_s = 30;
  return p;
}

config::Config fast_config(std::vector<config::Profile> profiles, const fs::path& dir) {
  config::Config c;
  c.profiles = std::move(profiles);
  c.orch.scheduling.min_residency_ms = 0;
  c.orch.scheduling.max_wait_before_swap_ms = 0;
  c.orch.scheduling.drain_timeout_s = 10;
  c.orch.state_dir = dir / "state";
  c.orch.log_dir = dir / "logs";
  return c;
}

std::vector<int> pids_with_arg(const std::string& needle) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::stoi(name);
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

static int count_dir(const fs::path& p) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(p)) ++n;
  return n;
}

int count_fds() { return count_dir("/proc/self/fd"); }
int count_threads() { return count_dir("/proc/self/task"); }

}  // namespace kevlaya::test
