// /proc probes shared by every suite: processes (by argv, parent, environment), zombies, and the
// fds, threads and RSS of a process (this one by default, for leak checks).
#pragma once
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace kevlaya::test {

// Pids of live (non-zombie) processes whose argv contains `needle`.
std::vector<int> pids_with_arg(const std::string& needle);
bool alive(int pid);  // exists and is not a zombie
// Live processes whose argv contains `needle` and that lead their own process group.
int group_leaders_with_arg(const std::string& needle);

std::vector<pid_t> children_of(pid_t parent);  // direct children
std::vector<pid_t> zombie_children_of(pid_t parent);
int fd_count(pid_t pid = ::getpid());      // entries in /proc/PID/fd
int thread_count(pid_t pid = ::getpid());  // Threads: of /proc/PID/status
long rss_kib(pid_t pid = ::getpid());
long peak_rss_kib(pid_t pid = ::getpid());  // VmHWM
// User + system CPU seconds of a process so far (/proc/PID/stat; clock ticks, 10 ms): a cost bound
// read in CPU time holds on a busy machine, where the wall time of the same work doubles. Throws
// when the process has no stat (gone).
double cpu_seconds(pid_t pid = ::getpid());
// Sockets in CLOSE-WAIT whose local port is `port` (/proc/net/tcp and tcp6): a server's side of
// connections whose client hung up and that the server has not closed.
int close_wait_on(int port);
// Processes (any parent) whose environment contains `marker` (KEY=VALUE), other than us.
std::vector<pid_t> processes_with_env(const std::string& marker);

}  // namespace kevlaya::test
