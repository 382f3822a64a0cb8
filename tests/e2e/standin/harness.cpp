#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "support/models.hpp"
#include "support/paths.hpp"

extern char** environ;

namespace kevlaya::test {
namespace {

constexpr auto kPoll = 10ms;  // log/exit polling period (there is no event to wait on for a file)

using Clock = std::chrono::steady_clock;

}  // namespace

StandinProcess::StandinProcess(const std::vector<std::string>& args, std::filesystem::path log_path,
                               const std::map<std::string, std::string>& env, const std::string& binary)
    : log_path_(std::move(log_path)) {
  std::vector<std::string> argv_s{binary.empty() ? standin_binary().string() : binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (char** e = environ; *e; e++) env_s.emplace_back(*e);
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  for (auto& e : env_s) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
}

StandinProcess::~StandinProcess() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
}

std::string StandinProcess::log() const { return read_text(log_path_); }

bool StandinProcess::wait_for_log(const std::string& needle, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (log().find(needle) != std::string::npos) return true;
    if (status_ || wait_exit(0ms)) return log().find(needle) != std::string::npos;
    std::this_thread::sleep_for(kPoll);
  }
  return false;
}

int StandinProcess::wait_ready(std::chrono::milliseconds limit) {
  const std::string key = "listening on http://127.0.0.1:";
  if (!wait_for_log(key, limit)) return 0;
  const std::string l = log();
  return std::stoi(l.substr(l.find(key) + key.size()));
}

std::optional<int> StandinProcess::wait_exit(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!status_) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPoll);
  }
  return status_;
}

void StandinProcess::send_signal(int sig) const { ::kill(pid_, sig); }

std::string model_path() { return tiny_llama().string(); }

}  // namespace kevlaya::test
