// What each backend is (docs/configuration.md, `backend`), asked instead of branching on the kind:
// one row per backend in config/backend.cpp. The rest of the code asks these questions, so a new
// backend is a new row (and, where it starts differently, its rule in supervisor/child.cpp).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::config {

struct BackendTraits {
  std::string_view name;       // as written in YAML
  bool spawns = true;          // a local child process; false: calls go to a URL, no local residency
  bool llama_server = false;   // llama-server itself: its flag table builds the argv, a per-start
                               // --api-key, slot files, the CORS proxy, Vertex AI's environment,
                               // and its model file is priced by the ledger and warmed
  bool own_command = false;    // the profile's `command` is the argv, and `stop.command` may end it
  bool renames_model = true;   // a call's `model` is sent as the profile's name (a command server
                               // gets what the caller wrote)
  bool declared_vram = false;  // priced by `vram_mib` when given, no model file read
};

// The row of `p`'s backend.
const BackendTraits& backend_of(const Profile& p);

// A remote profile named `name` whose calls go to `url` (a peer's model, docs/scale-out.md).
Profile remote_profile(std::string name, std::string url);
// A command profile named `name` that runs `argv` (the tools host: llama-server without a model).
Profile command_profile(std::string name, std::vector<std::string> argv);

}  // namespace kevlaya::config
