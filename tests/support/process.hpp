// A child process for process-level tests (`kevlaya-orch serve`, `run`, ...): stdout and stderr
// appended to a file, waited for by polling the file, SIGKILLed on destruction.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace kevlaya::test {

using namespace std::chrono_literals;

void poll_pause();  // 20 ms

// The variables of a running process's environment (/proc/PID/environ); empty if it is gone.
std::map<std::string, std::string> environ_of(pid_t pid);

// Polls `pred` every 20 ms until it is true or `timeout` passes; returns the last value.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    poll_pause();
  }
}

// A child process with stdout+stderr appended to a file. Killed (SIGKILL) on destruction. Its log
// is what it appended: an earlier process's lines in the same file are not its own.
class Proc {
 public:
  Proc(std::vector<std::string> argv, std::filesystem::path log_file,
       std::map<std::string, std::string> env = {});
  ~Proc();
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const;
  // Waits until `re` matches the log; returns the first group (or the match), empty on timeout
  // or when the process has exited without printing it.
  std::string wait_for(const std::regex& re, std::chrono::milliseconds timeout = 30s);
  // Sends `sig` and waits for the exit; returns the exit code (128 + signal when killed).
  int signal_and_wait(int sig, std::chrono::milliseconds timeout = 30s);
  // Waits for the exit without signalling; nullopt on timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_;
  std::size_t log_start_ = 0;  // the file's size when this process began
  std::optional<int> status_;
};

// `kevlaya-orch serve CONFIG --port 0 [extra...]`, started and waited for until it listens
// (REQUIREs it); the log goes to serve.log next to CONFIG.
class Serve {
 public:
  explicit Serve(const std::filesystem::path& config, std::map<std::string, std::string> env = {},
                 std::vector<std::string> extra = {});
  Proc& proc() { return proc_; }
  int port() const { return port_; }

 private:
  Proc proc_;
  int port_ = 0;
};

}  // namespace kevlaya::test
