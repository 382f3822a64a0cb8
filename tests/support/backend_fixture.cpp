#include "support/backend_fixture.hpp"

#include "support/models.hpp"

namespace kevlaya::test {

std::string command_profile_yaml(const std::string& name, const std::string& extra) {
  return "name: " + name + "\nbackend: command\nmodel: " + tiny_llama().string() +
         "\nctx: 256\nparallel: 1\nvram_mib: 64\n"
         "command: [" + standin_binary().string() +
         ", -m, '{model}', --host, '{host}', --port, '{port}', -c, '{ctx}', -np, '{parallel}', --alias, '{name}'" +
         extra + "]\n"
         "health: {first_probe_ms: 10, interval_ms: 20}\n"
         "restart: {backoff_initial_ms: 20, backoff_max_s: 1}\n";
}

std::string remote_profile_yaml(const std::string& name, const std::string& url, const std::string& more) {
  return "name: " + name + "\nbackend: remote\nurl: " + url +
         "\nhealth: {check_interval_s: 1, backoff_max_s: 1, probe_timeout_ms: 500}\n" + more;
}

void write_door_config(const TempDir& dir, const std::string& extra) {
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\n"
                                   "scheduling: {min_residency_ms: 0, max_wait_before_swap_ms: 0}\n" + extra);
}

HttpReply request(int port, const std::string& target, const std::string& body) {
  return http_request(port, body.empty() ? "GET" : "POST", target, body);
}

std::string chat(const std::string& model, bool stream) {
  return std::string(R"({"model":")") + model + R"(","max_tokens":4,)" + (stream ? R"("stream":true,)" : "") +
         R"("messages":[{"role":"user","content":"Once"}]})";
}

nlohmann::json status_of(int port) { return http_request(port, "GET", "/status", "", {}, 30s).json_body(); }

std::optional<nlohmann::json> profile_in(const nlohmann::json& status, const std::string& name) {
  if (!status.is_object() || !status.contains("profiles")) return std::nullopt;
  for (const auto& p : status["profiles"])
    if (p.value("name", "") == name) return p;
  return std::nullopt;
}

}  // namespace kevlaya::test
