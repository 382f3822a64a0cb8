// Helpers for the reliability suite: a chat request, the OpenAI error shape, and stand-in configs;
// the HTTP client and the /proc probes are tests/support's (http_client.hpp, proc_probes.hpp).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "support/http_client.hpp"  // HttpReply, http_raw, http_get, http_post
#include "support/paths.hpp"
#include "support/proc_probes.hpp"   // children_of, fd_count, rss_kib, thread_count
#include "support/process.hpp"  // Proc, Serve, eventually

namespace kevlaya::test {

using namespace std::chrono_literals;

// A chat completion for `model` (max_tokens 4; streamed when `stream`).
HttpReply chat(int port, const std::string& model, bool stream = false,
               std::chrono::milliseconds timeout = 30s);
// True when the body is an OpenAI-shaped error: {"error":{"message":...,"type":...,"code":...}}.
bool is_openai_error(const std::string& body);

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
