// The door-side checks of llama-server routes it forwards to a child after judging them itself
// (slot actions, the CORS proxy) and the merge of the children's own metrics. Pure: no Beast, no
// I/O; the routes are in child_routes.cpp and child_metrics.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kevlaya::http {

// A slot id as llama-server reads it in /slots/{id}: 1 to 9 decimal digits.
bool valid_slot_id(std::string_view id);

// A slot file name that stays inside the child's slot folder: 1 to 255 bytes, no '/', '\', ".."
// or NUL.
bool safe_slot_filename(std::string_view name);

// True when these child arguments turn llama-server's /cors-proxy on: the last of --ui-mcp-proxy,
// --webui-mcp-proxy and their --no- forms decides (absent = off, llama-server's default).
bool enables_cors_proxy(const std::vector<std::string>& args);

// Children's Prometheus texts (model name, exposition) as one exposition: every sample gets a
// model="<name>" label, and each family is written once (HELP, TYPE, then every model's samples).
std::string merge_child_metrics(const std::vector<std::pair<std::string, std::string>>& by_model);

}  // namespace kevlaya::http
