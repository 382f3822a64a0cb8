#include "http/router_api.hpp"

#include "common/bounded_json.hpp"
#include "config/backend.hpp"
#include "http/bodies.hpp"

namespace kevlaya::http {

using nlohmann::json;

nlohmann::json router_status_json(const config::Profile& prof, const supervisor::ProfileStatus* st) {
  using supervisor::Phase;
  const Phase ph = st ? st->state : Phase::stopped;
  // The router's three values: a draining child still answers, a stopping one no longer does.
  const char* value = ph == Phase::ready || ph == Phase::draining ? "loaded"
                      : ph == Phase::starting                     ? "loading"
                                                                  : "unloaded";
  json args = json::array();
  if (config::backend_of(prof).llama_server)  // no per-start secret: build_argv's display form
    args = config::build_argv(prof, "127.0.0.1", st && st->port > 0 ? st->port : 0);
  json status = {{"value", value}, {"args", std::move(args)}};
  if (ph == Phase::failed) {
    status["failed"] = true;
    status["exit_code"] = st->last_failure ? st->last_failure->exit_code : -1;
  }
  return status;
}

Result<std::string> router_model_name(const config::Config& cfg, std::string_view body) {
  auto parsed = parse_json_bounded(body);
  if (!parsed) return make_error(Errc::bad_request, "request body: " + parsed.error().message);
  if (!parsed->is_object()) return make_error(Errc::bad_request, "request body is not a JSON object");
  auto field = typed_field(*parsed, "model", JsonKind::string);
  if (!field) return field.error();
  if (!*field || (*field)->get<std::string>().empty())
    return make_error(Errc::bad_request, "missing \"model\" (send {\"model\": \"name\"})");
  const std::string name = (*field)->get<std::string>();
  if (const auto* p = cfg.find_profile(name)) return p->name;
  std::string known;
  for (const auto& p : cfg.profiles) known += (known.empty() ? "" : ", ") + p.name;
  return make_error(Errc::not_found, "model is not found: '" + name + "'; known models: " + known);
}

}  // namespace kevlaya::http
