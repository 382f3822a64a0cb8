#include "http/bodies.hpp"

#include "common/bounded_json.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

std::string known_models(const config::Config& cfg) {
  std::string out;
  for (const auto& p : cfg.profiles) {
    out += (out.empty() ? "" : ", ") + p.name;
    for (const auto& a : p.alias) out += ", " + a + " (alias of " + p.name + ")";
  }
  return out.empty() ? "(none configured)" : out;
}

}  // namespace

Result<std::string> resolve_model(const config::Config& cfg, const std::string& requested) {
  if (requested.empty()) {
    if (cfg.profiles.size() != 1)
      return make_error(Errc::bad_request, "missing \"model\"; known models: " + known_models(cfg));
    return cfg.profiles.front().name;  // one model: llama-server clients may omit it
  }
  if (const auto* p = cfg.find_profile(requested)) return p->name;
  return make_error(Errc::not_found, "unknown model '" + requested + "'; known models: " + known_models(cfg));
}

Result<ModelCall> parse_model_call(const config::Config& cfg, std::string_view text) {
  ModelCall call;
  auto body = parse_json_bounded(text);  // depth-limited: the body may be re-serialized
  if (!body) return make_error(Errc::bad_request, "request body: " + body.error().message);
  call.body = std::move(body.value());
  if (!call.body.is_object()) return make_error(Errc::bad_request, "request body is not a JSON object");
  const auto it = call.body.find("model");
  if (it != call.body.end() && !it->is_string())
    return make_error(Errc::bad_request, "\"model\" must be a string");
  call.requested = it != call.body.end() ? it->get<std::string>() : "";
  auto profile = resolve_model(cfg, call.requested);
  if (!profile) return profile.error();
  call.profile = std::move(profile.value());
  const auto s = call.body.find("stream");
  call.stream = s != call.body.end() && s->is_boolean() && s->get<bool>();
  return call;
}

std::string child_body(const ModelCall& call, const std::string& raw, const std::string& profile,
                       const std::vector<std::pair<std::string, double>>& lora) {
  const bool rename = !profile.empty() && !call.requested.empty() && call.requested != profile;
  if (lora.empty() && !rename) return raw;
  json b = call.body;
  if (rename) b["model"] = profile;
  if (!lora.empty()) {
    json arr = json::array();
    for (std::size_t i = 0; i < lora.size(); ++i) arr.push_back({{"id", i}, {"scale", lora[i].second}});
    b["lora"] = std::move(arr);
  }
  return b.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<json> parse_run_body(std::string_view text) {
  auto task = parse_json_bounded(text);  // depth-limited: the runner re-serializes it
  if (!task) return make_error(Errc::bad_request, "request body: " + task.error().message);
  if (!task->is_object() || !task->contains("input"))
    return make_error(Errc::bad_request, "body must be a JSON object with \"input\" (and optional \"candidates\")");
  return task;
}

}  // namespace kevlaya::http
