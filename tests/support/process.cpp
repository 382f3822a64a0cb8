#include "support/process.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "support/paths.hpp"

namespace kevlaya::test {

namespace fs = std::filesystem;

void poll_pause() { std::this_thread::sleep_for(20ms); }

std::map<std::string, std::string> environ_of(pid_t pid) {
  std::map<std::string, std::string> out;
  const std::string raw = read_text("/proc/" + std::to_string(pid) + "/environ");
  for (std::size_t at = 0; at < raw.size();) {
    const auto end = raw.find('\0', at);
    const std::string kv = raw.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (const auto eq = kv.find('='); eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// ---- Proc -----------------------------------------------------------------------------------

Proc::Proc(std::vector<std::string> argv, fs::path log_file, std::map<std::string, std::string> env)
    : log_(std::move(log_file)) {
  const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  struct stat st {};
  if (::fstat(fd, &st) == 0) log_start_ = static_cast<std::size_t>(st.st_size);
  pid_ = ::fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
}

Proc::~Proc() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string Proc::log() const {
  const std::string text = read_text(log_);
  return text.size() > log_start_ ? text.substr(log_start_) : std::string();
}

bool Proc::running() {
  if (status_) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

std::string Proc::wait_for(const std::regex& re, std::chrono::milliseconds timeout) {
  std::string found;
  eventually([&] {
    const std::string text = log();
    std::smatch m;
    if (std::regex_search(text, m, re)) {
      found = m.size() > 1 ? m[1].str() : m[0].str();
      return true;
    }
    return !running();
  }, timeout);
  return found;
}

std::optional<int> Proc::wait_exit(std::chrono::milliseconds timeout) {
  eventually([&] { return !running(); }, timeout);
  return status_;
}

int Proc::signal_and_wait(int sig, std::chrono::milliseconds timeout) {
  if (running()) ::kill(pid_, sig);
  if (auto st = wait_exit(timeout)) return *st;
  ::kill(pid_, SIGKILL);
  return wait_exit(5s).value_or(-1);
}

namespace {
std::vector<std::string> serve_argv(const fs::path& config, std::vector<std::string> extra) {
  std::vector<std::string> argv = {orch_binary().string(), "serve", config.string(), "--port", "0"};
  for (auto& e : extra) argv.push_back(std::move(e));
  return argv;
}
}  // namespace

Serve::Serve(const fs::path& config, std::map<std::string, std::string> env, std::vector<std::string> extra)
    : proc_(serve_argv(config, std::move(extra)), config.parent_path() / "serve.log", std::move(env)) {
  const auto port = proc_.wait_for(std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)"));
  INFO(proc_.log());
  REQUIRE_FALSE(port.empty());
  port_ = std::stoi(port);
}

}  // namespace kevlaya::test
