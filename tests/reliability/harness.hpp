// Helpers for the reliability suite: `kevlaya-orch` as a real child process (serve, run, logs),
// a small blocking HTTP client on raw sockets (so malformed requests can be sent as bytes), and
// /proc probes (children, zombies, fds, RSS, threads).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"  // Proc, Serve, eventually

namespace kevlaya::test {

using namespace std::chrono_literals;

struct HttpReply {
  int status = 0;                             // 0 = no response (connection closed / timeout)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                           // de-chunked
  bool timed_out = false;
  bool closed = false;  // the server closed the connection (read EOF) after the reply
};

// A blocking TCP connection to 127.0.0.1:port (close-on-exec); -1 when it fails.
int connect_loopback(int port);
// Sends `raw` bytes to 127.0.0.1:port and reads one response (until it is complete or the peer
// closes), then waits up to `linger` for the server to close the connection. Never hangs longer
// than `timeout` + `linger`.
HttpReply http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout = 30s,
                   std::chrono::milliseconds linger = 0ms);
// A request with `Connection: close`; a body means POST with Content-Type: application/json.
HttpReply http_get(int port, const std::string& target, std::chrono::milliseconds timeout = 30s,
                   const std::string& extra_headers = "");
HttpReply http_post(int port, const std::string& target, const std::string& json_body,
                    std::chrono::milliseconds timeout = 30s, const std::string& extra_headers = "");
// A chat completion for `model` (max_tokens 4; streamed when `stream`).
HttpReply chat(int port, const std::string& model, bool stream = false,
               std::chrono::milliseconds timeout = 30s);
// True when the body is an OpenAI-shaped error: {"error":{"message":...,"type":...,"code":...}}.
bool is_openai_error(const std::string& body);

// /proc probes.
std::vector<pid_t> children_of(pid_t parent);  // direct children
std::vector<pid_t> zombie_children_of(pid_t parent);
int fd_count(pid_t pid);
long rss_kib(pid_t pid);
int thread_count(pid_t pid);
// Processes (any parent) whose environment contains `marker` (KEY=VALUE), other than us.
std::vector<pid_t> processes_with_env(const std::string& marker);

}  // namespace kevlaya::test

namespace kevlaya::test {

// A stand-in profile for write_config: name, stand-in flags, and extra YAML lines.
struct StandinProfile {
  std::string name;
  std::vector<std::string> flags;
  std::string yaml;  // extra top-level lines, e.g. "port: 1234\n"
};

// kevlaya.yaml + profiles/*.yaml in `dir`: stand-in children on stories260K with fast health
// probes, a short stop grace and quick restarts; `orch_yaml` is appended to kevlaya.yaml (a
// `queue:` in it replaces the default queue).
std::filesystem::path write_config(const std::filesystem::path& dir, const std::vector<StandinProfile>& profiles,
                                   const std::string& orch_yaml = "");
inline std::filesystem::path write_config(const TempDir& dir, const std::vector<StandinProfile>& profiles,
                                          const std::string& orch_yaml = "") {
  return write_config(dir.path(), profiles, orch_yaml);
}

}  // namespace kevlaya::test
