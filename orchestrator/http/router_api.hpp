// llama-server's router API on the door (docs/http.md, "llama.cpp router API"): each model's
// `status` in the router's shape for GET /models and /v1/models, and the body of POST
// /models/load and /models/unload. The routes themselves are router.cpp's /admin/load and
// /admin/unload handlers, answered in the router's shape. Pure: no Beast, no I/O.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "config/config.hpp"
#include "supervisor/types.hpp"

namespace kevlaya::http {

// The router's `status` of a model: {"value": "loaded"|"loading"|"unloaded", "args": [argv]}, plus
// "failed": true and "exit_code" after a failed start. `st` null = never started.
nlohmann::json router_status_json(const config::Profile& prof, const supervisor::ProfileStatus* st);

// The profile POST /models/load or /models/unload names: {"model": "name or alias"}. Strict (no
// default_model: an admin action never falls to another model). Errors: 400 (not a JSON object,
// no "model" string), 404 (unknown, listing the known models).
Result<std::string> router_model_name(const config::Config& cfg, std::string_view body);

}  // namespace kevlaya::http
