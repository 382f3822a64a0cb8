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

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads into `out` until EOF, until `needle` appears, or until the deadline.
void read_some(int fd, std::string& out, const std::string& needle, Clock::time_point deadline) {
  char buf[4096];
  while (needle.empty() || out.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string dechunk(const std::string& s) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t eol = s.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t len = std::stoul(s.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) break;
    out += s.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

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

HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& headers, std::chrono::milliseconds limit) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& h : headers) req += h + "\r\n";
  if (!body.empty() || method == "POST") {
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  const std::string raw = read_until(port, req + "\r\n" + body, "", limit);
  HttpReply r;
  const size_t hdr_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || hdr_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  r.headers = raw.substr(0, hdr_end);
  r.body = raw.substr(hdr_end + 4);
  if (r.headers.find("Transfer-Encoding: chunked") != std::string::npos) r.body = dechunk(r.body);
  return r;
}

std::string read_until(int port, const std::string& raw_request, const std::string& needle,
                       std::chrono::milliseconds limit) {
  const int fd = connect_to(port);
  if (fd < 0) return {};
  std::string out;
  if (::send(fd, raw_request.data(), raw_request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(raw_request.size())) {
    read_some(fd, out, needle, Clock::now() + limit);
  }
  ::close(fd);
  return out;
}

std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end == std::string::npos ? std::string::npos : end - pos - 6));
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

std::string model_path() { return tiny_llama().string(); }

}  // namespace kevlaya::test
