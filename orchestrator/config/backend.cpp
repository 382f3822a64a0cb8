#include "config/backend.hpp"

namespace kevlaya::config {

namespace {

constexpr BackendTraits kLlamaServer{.name = "llama-server", .llama_server = true};
constexpr BackendTraits kCommand{.name = "command", .own_command = true, .renames_model = false, .declared_vram = true};
constexpr BackendTraits kRemote{.name = "remote", .spawns = false};

}  // namespace

const BackendTraits& backend_of(const Profile& p) {
  switch (p.backend) {
    case Backend::llama_server: return kLlamaServer;
    case Backend::command: return kCommand;
    case Backend::remote: return kRemote;
  }
  return kLlamaServer;
}

Profile remote_profile(std::string name, std::string url) {
  Profile p;
  p.name = std::move(name);
  p.backend = Backend::remote;
  p.binary.clear();
  p.url = std::move(url);
  return p;
}

Profile command_profile(std::string name, std::vector<std::string> argv) {
  Profile p;
  p.name = std::move(name);
  p.backend = Backend::command;
  p.command = std::move(argv);
  return p;
}

}  // namespace kevlaya::config
