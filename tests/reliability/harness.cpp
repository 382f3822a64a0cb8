#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/models.hpp"

namespace kevlaya::test {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using SClock = std::chrono::steady_clock;

// ---- HTTP -----------------------------------------------------------------------------------

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

namespace {

int ms_left(SClock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

void fill(HttpReply& r, bhttp::response_parser<bhttp::string_body>& p) {
  auto& m = p.get();
  r.status = static_cast<int>(m.result_int());
  for (const auto& f : m) {
    std::string k(f.name_string());
    for (auto& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    r.headers[k] = std::string(f.value());
  }
  r.body = m.body();
}

}  // namespace

HttpReply http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds linger) {
  HttpReply r;
  const auto deadline = SClock::now() + timeout;
  const int fd = connect_loopback(port);
  if (fd < 0) return r;
  // A server may answer (and close) before it read everything: a failed send is not an error.
  for (std::size_t sent = 0; sent < raw.size();) {
    const auto n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  bhttp::response_parser<bhttp::string_body> p;
  p.eager(true);
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  std::string pending;
  boost::system::error_code ec;
  while (!p.is_done()) {
    pollfd pf{fd, POLLIN, 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&pf, 1, left) <= 0) {
      r.timed_out = true;
      break;
    }
    char buf[16384];
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (p.is_header_done()) p.put_eof(ec);
      r.closed = true;
      break;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    while (!pending.empty() && !p.is_done()) {
      const auto used = p.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec) break;
    }
    if (ec) break;
  }
  for (const auto until = SClock::now() + linger; !r.closed && p.is_done();) {
    pollfd pf{fd, POLLIN, 0};
    const int left = ms_left(until);
    if (left == 0 || ::poll(&pf, 1, left) <= 0) break;
    char buf[4096];
    r.closed = ::recv(fd, buf, sizeof buf, 0) <= 0;
  }
  ::close(fd);
  if (p.is_header_done()) fill(r, p);
  return r;
}

HttpReply http_get(int port, const std::string& target, std::chrono::milliseconds timeout,
                   const std::string& extra_headers) {
  return http_raw(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                            extra_headers + "\r\n", timeout);
}

HttpReply http_post(int port, const std::string& target, const std::string& json_body,
                    std::chrono::milliseconds timeout, const std::string& extra_headers) {
  return http_raw(port, "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(json_body.size()) + "\r\n" + extra_headers + "\r\n" +
                            json_body, timeout);
}

HttpReply chat(int port, const std::string& model, bool stream, std::chrono::milliseconds timeout) {
  const nlohmann::json body = {{"model", model}, {"max_tokens", 4}, {"stream", stream},
                               {"messages", {{{"role", "user"}, {"content", "Once upon"}}}}};
  return http_post(port, "/v1/chat/completions", body.dump(), timeout);
}

bool is_openai_error(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return false;
  const auto& e = j["error"];
  return e.contains("message") && e["message"].is_string() && e.contains("type") && e.contains("code");
}

// ---- /proc ----------------------------------------------------------------------------------

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

long rss_kib(pid_t pid) { return status_value(pid, "VmRSS"); }
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

}  // namespace kevlaya::test

namespace kevlaya::test {

fs::path write_config(const fs::path& dir, const std::vector<StandinProfile>& profiles,
                      const std::string& orch_yaml) {
  for (const auto& p : profiles) {
    std::string flags;
    for (const auto& f : p.flags) flags += (flags.empty() ? "" : ", ") + std::string("\"") + f + "\"";
    write_text(dir / ("profiles/" + p.name + ".yaml"),
               "name: " + p.name + "\nbinary: " + standin_binary().string() + "\nmodel: " +
                   tiny_llama().string() + "\nngl: 0\nctx: 256\nparallel: 2\nextra_args: [" + flags +
                   "]\nshared_base: false\n" +  // same GGUF for all: keep them separate children
                   (p.yaml.find("health:") == std::string::npos
                        ? "health: {first_probe_ms: 5, interval_ms: 10, startup_timeout_s: 3}\n" : "") +
                   "stop: {grace_s: 0.5}\n"
                   "restart: {max_restarts: 3, window_s: 60, backoff_initial_ms: 20, backoff_max_s: 1, "
                   "cooldown_s: 30}\n" + p.yaml);
  }
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml",
             std::string("profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n") +
                 (orch_yaml.find("queue:") == std::string::npos ? "queue: {max_depth: 8, max_wait_s: 20}\n" : "") +
                 "residency: rotate\n"  // one child at a time: every model change is a switch
                 "scheduling: {max_wait_before_swap_ms: 100, min_residency_ms: 0, drain_timeout_s: 5}\n" +
                 orch_yaml);
  return dir / "kevlaya.yaml";
}

}  // namespace kevlaya::test
