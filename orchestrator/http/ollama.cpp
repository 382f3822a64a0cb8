// Ollama's API at /api/* (docs/http.md): model listing from the config and the supervisor,
// chat/generate/embed translated by ollama_map.cpp and forwarded through proxy.cpp (queue,
// swap, relay), every error as Ollama's {"error": "..."}.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <filesystem>
#include <system_error>

#include "common/bounded_json.hpp"
#include "http/detail.hpp"
#include "http/ollama.hpp"
#include "ledger/plan.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kOllamaVersion = "0.6.0";  // the API level the translation follows
constexpr const char* kForever = "2262-04-11T23:47:16Z";  // Ollama's "never expires"

Reply ollama_error(int status, const std::string& message) { return json_reply(status, {{"error", message}}); }

Reply ollama_error(const Error& e) { return reshape_error(error_reply(e), ApiShape::ollama); }

json details(const config::Profile& p) {
  return {{"parent_model", ""}, {"format", "gguf"}, {"family", ""}, {"families", json::array()},
          {"parameter_size", ""}, {"quantization_level", p.quant}};
}

json tag_json(const config::Profile& p) {
  std::error_code ec;
  const auto size = p.model.empty() ? 0 : fs::file_size(p.model, ec);
  std::int64_t mtime = 0;
  if (!p.model.empty()) {
    const auto t = fs::last_write_time(p.model, ec);
    if (!ec)
      mtime = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
  }
  return {{"name", p.name}, {"model", p.name}, {"modified_at", rfc3339(mtime)}, {"size", ec ? 0 : size},
          {"digest", ""}, {"details", details(p)}};
}

json tags_json(const config::Config& cfg) {
  json models = json::array();
  for (const auto& p : cfg.profiles) models.push_back(tag_json(p));
  return {{"models", models}};
}

// The resident profiles with the plan's bill of each (bytes on the GPU, and in all; 0 when the
// plan could not price it): what the startup or the last reload read, no model file read again.
json ps_json(const config::Config& cfg, const ledger::Plan* plan, const supervisor::Snapshot& snap) {
  json models = json::array();
  for (const auto& st : snap.profiles) {
    const auto* p = cfg.find_profile(st.name);
    if (!p || st.state != supervisor::Phase::ready) continue;
    const ledger::Bill* bill = nullptr;
    if (plan)
      for (const auto& b : plan->profiles)
        if (b.name == p->name) {
          bill = &b.effective;
          break;
        }
    json m = tag_json(*p);
    m["size_vram"] = bill ? bill->total_gpu() : 0;
    m["size"] = bill ? bill->total_gpu() + ledger::host_part(*bill) : 0;  // all of it: GPU and host
    m["expires_at"] = kForever;
    models.push_back(std::move(m));
  }
  return {{"models", models}};
}

json show_json(const config::Profile& p) {
  return {{"modelfile", ""}, {"parameters", "num_ctx " + std::to_string(p.ctx)}, {"template", ""},
          {"details", details(p)}, {"model_info", {{"general.basename", p.name}, {"kevlaya.ctx", p.ctx},
                                                   {"kevlaya.aliases", p.alias}}},
          {"capabilities", json::array({"completion"})}, {"modified_at", tag_json(p)["modified_at"]}};
}

OllamaKind kind_of(std::string_view name) {
  if (name == "generate") return OllamaKind::generate;
  if (name == "embed") return OllamaKind::embed;
  if (name == "embeddings") return OllamaKind::embeddings;
  return OllamaKind::chat;
}

// The body's model: Ollama's "model" (or the older "name").
std::string model_field(const json& body) {
  for (const char* k : {"model", "name"})
    if (body.contains(k) && body[k].is_string()) return body[k];
  return {};
}

// An Ollama model call -> the ProxyCall proxy.cpp forwards, or the error to answer.
Result<ProxyCall> plan_call(const Door& d, OllamaKind kind, const json& body, std::string_view raw_body) {
  for (const char* k : {"model", "name"})
    if (auto f = typed_field(body, k, JsonKind::string); !f) return f.error();
  const auto name = model_field(body);
  auto resolved = d.cfg().resolve_model(name);  // the one resolution (":latest" included)
  if (!resolved) return resolved.error();
  const config::Profile* prof = *resolved;
  auto mapped = ollama_to_openai(kind, body, prof->name, prof->ctx);
  if (!mapped) return mapped.error();
  ProxyCall call;
  call.requested = prof->name;  // the translated body names the profile already
  call.cfg = ledger::config_of(d.snap);
  call.prof = prof;
  call.stream = ollama_streams(kind, body);
  call.target = ollama_target(kind, body);
  call.shape = ApiShape::ollama;
  call.body_text = ollama_request_text(*mapped, raw_body);
  if (const auto k = body.find("keep_alive"); k != body.end()) call.keep_alive_s = parse_keep_alive(*k).value();
  const std::string shown = name.empty() ? prof->name : name;
  call.times = std::make_shared<CallTimes>();  // Ollama's load_duration and total_duration
  if (call.stream) {
    auto s = std::make_shared<OllamaStream>(kind, shown, call.times);
    call.stream_map = [s](std::string_view bytes) { return s->feed(bytes); };
    call.wait_map = [s](const std::string& text) { return s->thinking_line(text); };
    call.stream_type = "application/x-ndjson";
  }
  call.body_map = [kind, shown, times = call.times](const std::string& b) {
    return ollama_answer(kind, b, shown, times.get());
  };
  return call;
}

// The answers that need no child (version, tags, show, refusals); nullopt for a model call.
// (Plain function: GCC 12 mishandles braced initialisers and ?: temporaries inside coroutines.)
std::optional<Reply> local_reply(const Door& d, const std::string& name, const Result<json>& body) {
  if (name == "version") return json_reply(200, {{"version", kOllamaVersion}});
  if (name == "tags") return json_reply(200, tags_json(d.cfg()));
  if (name != "show" && name != "chat" && name != "generate" && name != "embed" && name != "embeddings")
    return ollama_error(501, "/api/" + name + " is not supported by kevlaya: models are profiles in kevlaya.yaml's "
                             "profiles_dir, not pulled or created through the API (docs/http.md)");
  if (!body) return ollama_error(400, "request body: " + body.error().message);
  if (!body->is_object()) return ollama_error(400, "request body is not a JSON object");
  if (name != "show") return std::nullopt;
  for (const char* k : {"model", "name"})
    if (auto f = typed_field(body.value(), k, JsonKind::string); !f) return ollama_error(400, f.error().message);
  auto prof = d.cfg().resolve_model(model_field(body.value()));
  if (!prof) return ollama_error(prof.error());
  return json_reply(200, show_json(**prof));
}

std::string_view body_of(const Request& req) {
  if (req.method() == bhttp::verb::post) return req.body();
  return "{}";  // GET /api/*: no body
}

Reply ps_reply(const Door& d, const supervisor::Snapshot& snap) {
  return json_reply(200, ps_json(d.cfg(), d.snap->plan ? &*d.snap->plan : nullptr, snap));
}

}  // namespace

asio::awaitable<void> ollama_call(Door& d, Request& req, Connection& c, const RouteMatch& m) {
  const auto t0 = Clock::now();
  const std::string name(m.arg);
  if (name == "ps") {
    const auto snap = co_await d.sup.snapshot();
    co_return co_await c.reply(ps_reply(d, snap));
  }
  const auto body = parse_json_bounded(body_of(req));
  if (auto r = local_reply(d, name, body)) co_return co_await c.reply(std::move(*r));
  auto call = plan_call(d, kind_of(name), body.value(), body_of(req));
  if (!call) co_return co_await c.reply(ollama_error(call.error()));
  co_await proxy_call(d, req, c, std::move(call.value()), t0);
}

}  // namespace kevlaya::http
