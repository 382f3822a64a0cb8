// Drives the built stand-in over real processes and sockets: spawn with args, read its log,
// signal it, wait for its exit; requests go through support/http_client.hpp.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/http_client.hpp"  // HttpReply, http_request, read_until, sse_events

namespace kevlaya::test {

using namespace std::chrono_literals;

class StandinProcess {
 public:
  // Starts the stand-in (or `binary`, e.g. the real llama-server) with `args`; stderr+stdout go to
  // `log_path`. `env` entries are added.
  StandinProcess(const std::vector<std::string>& args, std::filesystem::path log_path,
                 const std::map<std::string, std::string>& env = {}, const std::string& binary = "");
  ~StandinProcess();
  StandinProcess(const StandinProcess&) = delete;
  StandinProcess& operator=(const StandinProcess&) = delete;

  // Waits until the log contains `needle`; false on timeout or when the process exited first.
  bool wait_for_log(const std::string& needle, std::chrono::milliseconds limit = 20s);
  // Waits for "listening on http://H:P" and returns P (0 on failure).
  int wait_ready(std::chrono::milliseconds limit = 20s);
  // Exit status (code, or 128+signal) once the process ended within `limit`.
  std::optional<int> wait_exit(std::chrono::milliseconds limit = 20s);
  void send_signal(int sig) const;
  std::string log() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_path_;
  std::optional<int> status_;
};

// Exact path of the GGUF used by the stand-in tests.
std::string model_path();

}  // namespace kevlaya::test
