// Non-completion routes of the stand-in, with the real server's paths, shapes and errors.
#include <ctime>
#include <fstream>
#include <sstream>

#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "app.hpp"
#include "log.hpp"

namespace standin {
namespace {

constexpr const char* kSlotFileMagic = "KEVLAYA-STANDIN-SLOT 1\n";

bool valid_filename(const std::string& f) {
  return !f.empty() && f.size() <= 255 && f.find('/') == std::string::npos && f.find('\\') == std::string::npos &&
         f != "." && f != ".." && f.find('\0') == std::string::npos;
}

std::optional<int> parse_slot_id(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool public_path(const std::string& p) {
  return p == "/health" || p == "/v1/health" || p == "/models" || p == "/v1/models";
}

// --ui-mcp-proxy's /cors-proxy?url=...: the stand-in fetches nothing; it answers what the real
// server would send to the target (method, URL, the x-llama-server-proxy-header-* headers without
// their prefix, body), with a response header of the target's own (Mcp-Session-Id).
net::awaitable<void> cors_proxy(const HttpRequest& req, Responder& res) {
  const auto url = req.query.find("url");
  if (url == req.query.end() || url->second.empty()) {
    const std::string body_ = error_json(ErrorReply{500, "invalid target URL: missing host", "server_error"});
    co_await res.send(500, body_);
    co_return;
  }
  const std::string body_ = ojson{{"method", req.method}, {"url", url->second}, {"headers", req.proxy_headers},
                                  {"body", req.body}}.dump();
  std::vector<std::pair<std::string, std::string>> headers;  // (named: GCC 12 and braced temporaries)
  headers.emplace_back("Mcp-Session-Id", "standin-session");
  co_await res.send(200, body_, kJsonType, std::move(headers));
}

std::string bearer(const HttpRequest& req) {
  std::string key = req.authorization.empty() ? req.x_api_key : req.authorization;
  if (key.rfind("Bearer ", 0) == 0) key = key.substr(7);
  return key;
}

}  // namespace

std::string error_json(const ErrorReply& e) {
  return ojson{{"error", {{"code", e.code}, {"message", e.message}, {"type", e.type}}}}.dump();
}

App::App(net::io_context& ioc, Options opt, Script script)
    : ioc_(ioc), opt_(std::move(opt)), script_(std::move(script)), slot_freed_(ioc), idle_(ioc) {
  slot_freed_.expires_at(net::steady_timer::time_point::max());
  idle_.expires_at(net::steady_timer::time_point::max());
  t_start_ = static_cast<std::int64_t>(std::time(nullptr));
}

void App::set_ready(LoadedModel model) {
  slots_.clear();
  for (int i = 0; i < model.n_slots; i++) slots_.push_back(Slot{i, false, -1, {}, 0, 0});
  model_ = std::move(model);
}

net::awaitable<void> App::send_error(Responder& res, const ErrorReply& e) {
  co_await res.send(e.code, error_json(e));
}

net::awaitable<void> App::handle(const HttpRequest& req, Responder& res) {
  if (opt_.fake_hang_health && (req.path == "/health" || req.path == "/v1/health")) {
    net::steady_timer forever(ioc_, net::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await forever.async_wait(net::redirect_error(net::use_awaitable, ec));
    co_return;
  }
  if (!model_) {
    {
    const std::string body_ = ojson{{"error", {{"message", "Loading model"}, {"type", "unavailable_error"}, {"code", 503}}}}.dump();
    co_await res.send(503, body_);
  }
    co_return;
  }
  if (!opt_.api_keys.empty() && !public_path(req.path)) {
    const std::string key = bearer(req);
    if (std::find(opt_.api_keys.begin(), opt_.api_keys.end(), key) == opt_.api_keys.end()) {
      logf(Level::warn, "srv  %s: unauthorized: Invalid API Key", fn12("operator()").c_str());
      {
    const std::string body_ = ojson{{"error", {{"message", "Invalid API Key"}, {"type", "authentication_error"}, {"code", 401}}}}.dump();
    co_await res.send(401, body_);
  }
      co_return;
    }
  }
  co_await route(req, res);
}

net::awaitable<void> App::route(const HttpRequest& req, Responder& res) {
  const std::string& p = req.path;
  const bool get = req.method == "GET";
  const bool post = req.method == "POST";
  if (get && (p == "/health" || p == "/v1/health")) {
    const std::string body_ = ojson{{"status", "ok"}}.dump();
    co_await res.send(200, body_);
    co_return;
  }
  if (get && (p == "/v1/models" || p == "/models")) { co_await get_models(res); co_return; }
  if (get && p == "/props") { co_await get_props(res); co_return; }
  if (get && p == "/slots") { co_await get_slots(req, res); co_return; }
  if (get && p == "/metrics") { co_await get_metrics(res); co_return; }
  if (get && p == "/lora-adapters") { co_await get_lora(res); co_return; }
  if (post && p == "/lora-adapters") { co_await post_lora(req, res); co_return; }
  if (post && p.rfind("/slots/", 0) == 0) { co_await post_slots(req, res); co_return; }
  if ((get || post) && p == "/cors-proxy" && opt_.ui_mcp_proxy) { co_await cors_proxy(req, res); co_return; }
  if (post && (p == "/completion" || p == "/completions")) { co_await completion(req, res, Kind::native); co_return; }
  if (post && p == "/v1/completions") { co_await completion(req, res, Kind::oai_completion); co_return; }
  if (post && (p == "/v1/chat/completions" || p == "/chat/completions"))
    { co_await completion(req, res, Kind::oai_chat); co_return; }
  if (co_await route_api(req, res)) co_return;
  {
    const std::string body_ = ojson{{"error", {{"message", "File Not Found"}, {"type", "not_found_error"}, {"code", 404}}}}.dump();
    co_await res.send(404, body_);
  }
}

ojson App::model_info_json() const {
  const auto& m = model_->info;
  return ojson{{"id", opt_.model_name()},
               {"aliases", opt_.aliases},
               {"tags", ojson::array()},
               {"object", "model"},
               {"created", static_cast<std::int64_t>(std::time(nullptr))},
               {"owned_by", "llamacpp"},
               {"meta",
                {{"vocab_type", 1},
                 {"n_vocab", m.n_vocab},
                 {"n_ctx", model_->n_ctx_slot},
                 {"n_ctx_train", m.n_ctx_train},
                 {"n_embd", m.n_embd},
                 {"n_params", m.n_params},
                 {"size", m.tensor_bytes},
                 {"ftype", m.quant}}}};
}

net::awaitable<void> App::get_models(Responder& res) {
  const std::string name = opt_.model_name();
  ojson models = ojson::array({ojson{{"name", name}, {"model", name}, {"modified_at", ""}, {"size", ""}, {"digest", ""},
                                     {"type", "model"}, {"description", ""}, {"tags", {""}},
                                     {"capabilities", {"completion"}}, {"parameters", ""},
                                     {"details", {{"parent_model", ""}, {"format", "gguf"}, {"family", ""},
                                                  {"families", {""}}, {"parameter_size", ""},
                                                  {"quantization_level", ""}}}}});
  {
    const std::string body_ = ojson{{"models", models}, {"object", "list"}, {"data", {model_info_json()}}}.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::get_props(Responder& res) {
  ojson props = {
      {"default_generation_settings", {{"params", {{"n_predict", -1}, {"seed", 4294967295u}}}, {"n_ctx", model_->n_ctx_slot}}},
      {"total_slots", static_cast<int>(slots_.size())},
      {"model_alias", opt_.model_name()},
      {"model_path", opt_.model_path},
      {"modalities", {{"vision", false}, {"video", false}, {"audio", false}}},
      {"endpoint_slots", opt_.slots_endpoint},
      {"endpoint_props", false},
      {"endpoint_metrics", opt_.metrics},
      {"ui", opt_.ui},
      {"chat_template", "{# chatml (stand-in) #}"},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"build_info", "b10470-standin"},
      {"is_sleeping", false},
  };
  {
    const std::string body_ = props.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::get_slots(const HttpRequest& req, Responder& res) {
  if (!opt_.slots_endpoint) {
    {
      const ErrorReply e_{501, "This server does not support slots endpoint. Start it with `--slots`", "not_supported_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  ojson arr = ojson::array();
  int idle = 0;
  for (const auto& s : slots_) {
    idle += s.busy ? 0 : 1;
    ojson j = {{"id", s.id}, {"n_ctx", model_->n_ctx_slot}, {"speculative", false}, {"is_processing", s.busy}};
    if (s.id_task >= 0) {
      j["id_task"] = s.id_task;
      j["n_prompt_tokens"] = s.n_prompt;
      j["n_prompt_tokens_cache"] = s.n_cached;
    }
    arr.push_back(std::move(j));
  }
  if (req.query.count("fail_on_no_slot") && !req.query.at("fail_on_no_slot").empty() && idle == 0) {
    {
      const ErrorReply e_{503, "no slot available", "unavailable_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  {
    const std::string body_ = arr.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::get_metrics(Responder& res) {
  if (!opt_.metrics) {
    {
      const ErrorReply e_{501, "This server does not support metrics endpoint. Start it with `--metrics`", "not_supported_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  int busy = 0;
  for (const auto& s : slots_) busy += s.busy ? 1 : 0;
  const auto& m = metrics_;
  struct Item { const char* name; const char* help; double value; };
  const Item counters[] = {
      {"prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", double(m.prompt_tokens)},
      {"prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", double(m.prompt_cached)},
      {"prompt_seconds_total", "Total time spent processing prompts", m.prompt_s},
      {"tokens_predicted_total", "Number of generation tokens processed", double(m.predicted_tokens)},
      {"tokens_predicted_seconds_total", "Total time spent generating tokens", m.predicted_s},
      {"n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", double(m.n_decode)},
      {"n_tokens_max", "Largest observed sequence length (prompt + generation)", double(m.n_tokens_max)},
  };
  const Item gauges[] = {
      {"prompt_tokens_seconds", "Average prompt throughput in tokens/s", m.prompt_s > 0 ? m.prompt_tokens / m.prompt_s : 0},
      {"predicted_tokens_seconds", "Average generation throughput in tokens/s", m.predicted_s > 0 ? m.predicted_tokens / m.predicted_s : 0},
      {"requests_processing", "Number of requests processing", double(busy)},
      {"requests_deferred", "Number of requests deferred", double(m.deferred)},
  };
  std::ostringstream out;
  const auto add = [&out](const char* type, const auto& items) {
    for (const auto& it : items) {
      out << "# HELP llamacpp:" << it.name << " " << it.help << "\n"
          << "# TYPE llamacpp:" << it.name << " " << type << "\n"
          << "llamacpp:" << it.name << " " << it.value << "\n";
    }
  };
  add("counter", counters);
  add("gauge", gauges);
  {
    const std::string body_ = out.str();
    co_await res.send(200, body_, "text/plain; version=0.0.4");
  }
}

net::awaitable<void> App::get_lora(Responder& res) {
  ojson arr = ojson::array();
  for (size_t i = 0; i < model_->adapters.size(); i++) {
    const auto& a = model_->adapters[i];
    arr.push_back({{"id", i}, {"path", a.path}, {"scale", a.scale}, {"task_name", ""}, {"prompt_prefix", ""}});
  }
  {
    const std::string body_ = arr.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::post_lora(const HttpRequest& req, Responder& res) {
  const auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
      const ErrorReply e_{500, "invalid JSON body", "server_error"};
      co_await send_error(res, e_);
      co_return;
    }
  if (!body.is_array()) {
      const ErrorReply e_{400, "Request body must be an array", "invalid_request_error"};
      co_await send_error(res, e_);
      co_return;
    }
  std::vector<float> scales(model_->adapters.size(), 0.0f);  // adapters not listed go to 0, like construct_lora_list
  for (const auto& e : body) {
    const int id = e.is_object() ? e.value("id", -1) : -1;
    if (id >= 0 && id < static_cast<int>(scales.size())) scales[static_cast<size_t>(id)] = e.value("scale", 0.0f);
  }
  for (size_t i = 0; i < scales.size(); i++) model_->adapters[i].scale = scales[i];
  {
    const std::string body_ = ojson{{"success", true}}.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::post_slots(const HttpRequest& req, Responder& res) {
  if (opt_.slot_save_path.empty()) {
    {
      const ErrorReply e_{501, "This server does not support slots action. Start it with `--slot-save-path`", "not_supported_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  const std::string id_str = req.path.substr(std::string("/slots/").size());
  const std::optional<int> id_opt = parse_slot_id(id_str);
  if (!id_opt) {
    const ErrorReply e_{400, "Invalid slot ID", "invalid_request_error"};
    co_await send_error(res, e_);
    co_return;
  }
  const int id = *id_opt;
  const std::string action = req.query.count("action") ? req.query.at("action") : "";
  if (action != "save" && action != "restore" && action != "erase") {
    {
      const ErrorReply e_{400, "Invalid action", "invalid_request_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  std::string filename;
  if (action != "erase") {
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("filename") || !body.at("filename").is_string()) {
      {
      const ErrorReply e_{500, "[json.exception.out_of_range.403] key 'filename' not found", "server_error"};
      co_await send_error(res, e_);
      co_return;
    }
    }
    filename = body.at("filename").get<std::string>();
    if (!valid_filename(filename)) {
      const ErrorReply e_{400, "Invalid filename", "invalid_request_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  if (id < 0 || id >= static_cast<int>(slots_.size())) {
    {
      const ErrorReply e_{400, "Invalid slot ID", "invalid_request_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  Slot& slot = slots_[static_cast<size_t>(id)];
  if (action == "save") { co_await slot_save(slot, filename, res); co_return; }
  if (action == "restore") { co_await slot_restore(slot, filename, res); co_return; }
  const size_t n = slot.cache.size();
  slot.cache.clear();
  {
    const std::string body_ = ojson{{"id_slot", id}, {"n_erased", n}}.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::slot_save(Slot& slot, const std::string& filename, Responder& res) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string data = kSlotFileMagic + nlohmann::json{{"tokens", slot.cache}}.dump();
  std::ofstream out(opt_.slot_save_path + filename, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) {
    logf(Level::error, "srv  %s: failed to create %s", fn12("operator()").c_str(), (opt_.slot_save_path + filename).c_str());
    {
      const ErrorReply e_{500, "Unable to save slot", "server_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {
    const std::string body_ = ojson{{"id_slot", slot.id}, {"filename", filename}, {"n_saved", slot.cache.size()},
                               {"n_written", data.size()}, {"timings", {{"save_ms", ms}}}}.dump();
    co_await res.send(200, body_);
  }
}

net::awaitable<void> App::slot_restore(Slot& slot, const std::string& filename, Responder& res) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = opt_.slot_save_path + filename;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  nlohmann::json tokens;
  if (in && data.rfind(kSlotFileMagic, 0) == 0) {
    const auto j = nlohmann::json::parse(data.substr(std::string(kSlotFileMagic).size()), nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("tokens") && j.at("tokens").is_array()) tokens = j.at("tokens");
  }
  if (tokens.is_null()) {
    logf(Level::error, "llama_state_seq_load_file: error loading sequence state file: failed to open %s", path.c_str());
    slot.cache.clear();
    {
      const ErrorReply e_{400, "Unable to restore slot: No available space in KV cache or invalid slot save file", "invalid_request_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  slot.cache.clear();
  for (const auto& t : tokens) slot.cache.push_back(t.is_string() ? t.get<std::string>() : std::string());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {
    const std::string body_ = ojson{{"id_slot", slot.id}, {"filename", filename}, {"n_restored", slot.cache.size()},
                               {"n_read", data.size()}, {"timings", {{"restore_ms", ms}}}}.dump();
    co_await res.send(200, body_);
  }
}

}  // namespace standin
