#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/models.hpp"

namespace kevlaya::test {

namespace fs = std::filesystem;

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
