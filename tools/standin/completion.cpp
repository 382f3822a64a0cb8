// Completion endpoints of the stand-in: /completion, /v1/completions, /v1/chat/completions,
// whole or streamed (SSE), with slots, a pretend prompt cache and llama.cpp-shaped timings.
#include <algorithm>
#include <ctime>
#include <random>

#include <utility>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "app.hpp"
#include "constrain.hpp"
#include "faults.hpp"
#include "log.hpp"

namespace standin {
namespace {

using json = nlohmann::json;

std::string random_id(const char* prefix) {
  static const char kChars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  static std::mt19937 gen{std::random_device{}()};
  std::string out = prefix;
  for (int i = 0; i < 32; i++) out += kChars[gen() % (sizeof(kChars) - 1)];
  return out;
}

std::string message_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.value("type", "") == "text") out += part.value("text", "");
    }
  }
  return out;
}

// ChatML rendering: what the digest and the scripted rules see for a chat request.
std::string render_chat(const json& messages) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|im_start|>" + m.value("role", "user") + "\n" + message_text(m.value("content", json(""))) + "<|im_end|>\n";
  }
  return out + "<|im_start|>assistant\n";
}

}  // namespace

std::string render_prompt(const json& messages) { return render_chat(messages); }

namespace {

struct Outcome {
  std::vector<std::string> tokens;  // generated pieces
  bool stopped_by_eos = true;       // false: hit n_predict
  int n_prompt = 0;
  int n_cached = 0;
  double prompt_ms = 0;
  double predicted_ms = 0;
  int id_slot = 0;
  std::string id;
  std::string model;
  std::vector<float> lora;  // the adapter scales applied (id = index)
};

ojson timings(const Outcome& o) {
  const double pn = std::max(1, o.n_prompt - o.n_cached);
  const double gn = static_cast<double>(o.tokens.size());
  return ojson{{"cache_n", o.n_cached},
               {"prompt_n", o.n_prompt - o.n_cached},
               {"prompt_ms", o.prompt_ms},
               {"prompt_per_token_ms", o.prompt_ms / pn},
               {"prompt_per_second", o.prompt_ms > 0 ? 1e3 * pn / o.prompt_ms : 0.0},
               {"predicted_n", o.tokens.size()},
               {"predicted_ms", o.predicted_ms},
               {"predicted_per_token_ms", gn > 0 ? o.predicted_ms / gn : 0.0},
               {"predicted_per_second", o.predicted_ms > 0 ? 1e3 * gn / o.predicted_ms : 0.0}};
}

ojson usage(const Outcome& o) {
  const int n = static_cast<int>(o.tokens.size());
  return ojson{{"completion_tokens", n}, {"prompt_tokens", o.n_prompt}, {"total_tokens", n + o.n_prompt},
               {"prompt_tokens_details", {{"cached_tokens", o.n_cached}}}};
}

std::string joined(const std::vector<std::string>& toks) {
  std::string s;
  for (const auto& t : toks) s += t;
  return s;
}

ojson token_ids(const std::vector<std::string>& toks) {
  ojson ids = ojson::array();
  for (const auto& t : toks) ids.push_back(fnv1a(t) % 512);
  return ids;
}

ojson oai_envelope(const Outcome& o, const char* object, ojson choices) {
  return ojson{{"choices", std::move(choices)}, {"created", static_cast<std::int64_t>(std::time(nullptr))},
               {"id", o.id}, {"model", o.model}, {"system_fingerprint", "b10470-standin"}, {"object", object}};
}

const char* finish_reason(const Outcome& o) { return o.stopped_by_eos ? "stop" : "length"; }

// generation_settings.lora of /completion, as llama-server's task_params::to_json.
ojson lora_json(const Outcome& o) {
  ojson arr = ojson::array();
  for (std::size_t i = 0; i < o.lora.size(); ++i) arr.push_back({{"id", i}, {"scale", o.lora[i]}});
  return arr;
}

GenView view(const Outcome& o) {
  return GenView{o.id, o.model, joined(o.tokens), o.n_prompt, static_cast<int>(o.tokens.size()), o.stopped_by_eos};
}

// The final (non-stream) body for each endpoint.
ojson final_body(Kind kind, const Outcome& o) {
  if (is_api_kind(kind)) return api_final_body(kind, view(o));
  const std::string text = joined(o.tokens);
  if (kind == Kind::oai_chat) {
    ojson body = {{"choices", {{{"finish_reason", finish_reason(o)}, {"index", 0},
                                {"message", {{"role", "assistant"}, {"content", text}}}}}},
                  {"created", static_cast<std::int64_t>(std::time(nullptr))}, {"model", o.model},
                  {"system_fingerprint", "b10470-standin"}, {"object", "chat.completion"}, {"usage", usage(o)},
                  {"id", o.id}};
    body["timings"] = timings(o);
    return body;
  }
  if (kind == Kind::oai_completion) {
    ojson body = {{"choices", {{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(o)}}}},
                  {"created", static_cast<std::int64_t>(std::time(nullptr))}, {"model", o.model},
                  {"system_fingerprint", "b10470-standin"}, {"object", "text_completion"}, {"usage", usage(o)},
                  {"id", o.id}};
    body["timings"] = timings(o);
    return body;
  }
  return ojson{{"index", 0}, {"content", text}, {"tokens", token_ids(o.tokens)}, {"id_slot", o.id_slot},
               {"stop", true}, {"model", o.model}, {"tokens_predicted", o.tokens.size()},
               {"tokens_evaluated", o.n_prompt}, {"has_new_line", text.find('\n') != std::string::npos},
               {"truncated", false}, {"stop_type", o.stopped_by_eos ? "eos" : "limit"}, {"stopping_word", ""},
               {"tokens_cached", o.n_prompt + static_cast<int>(o.tokens.size())}, {"timings", timings(o)},
               {"generation_settings", {{"lora", lora_json(o)}}}};
}

// SSE events for one generated token.
std::string token_events(Kind kind, const Outcome& o, const std::string& piece, size_t index) {
  if (is_api_kind(kind)) return api_token_events(kind, view(o), piece, index);
  std::string out;
  const auto emit = [&out](const ojson& j) { out += "data: " + j.dump() + "\n\n"; };
  if (kind == Kind::oai_chat) {
    if (index == 0) {
      emit(oai_envelope(o, "chat.completion.chunk",
                        {{{"finish_reason", nullptr}, {"index", 0}, {"delta", {{"role", "assistant"}, {"content", nullptr}}}}}));
    }
    emit(oai_envelope(o, "chat.completion.chunk", {{{"finish_reason", nullptr}, {"index", 0}, {"delta", {{"content", piece}}}}}));
  } else if (kind == Kind::oai_completion) {
    emit(oai_envelope(o, "text_completion", {{{"text", piece}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}}}));
  } else {
    emit(ojson{{"index", 0}, {"content", piece}, {"tokens", token_ids({piece})}, {"stop", false}, {"id_slot", -1},
               {"tokens_predicted", index + 1}, {"tokens_evaluated", o.n_prompt}});
  }
  return out;
}

// The closing SSE events (finish chunk, optional usage chunk, [DONE] for the OpenAI routes).
std::string final_events(Kind kind, const Outcome& o, bool include_usage) {
  if (is_api_kind(kind)) return api_final_events(kind, view(o));
  std::string out;
  const auto emit = [&out](const ojson& j) { out += "data: " + j.dump() + "\n\n"; };
  if (kind == Kind::oai_chat) {
    ojson last = oai_envelope(o, "chat.completion.chunk",
                              {{{"finish_reason", finish_reason(o)}, {"index", 0}, {"delta", ojson::object()}}});
    if (include_usage) {
      emit(last);
      last = oai_envelope(o, "chat.completion.chunk", ojson::array());
      last["usage"] = usage(o);
    }
    last["timings"] = timings(o);
    emit(last);
  } else if (kind == Kind::oai_completion) {
    ojson last = oai_envelope(o, "text_completion",
                              {{{"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(o)}}});
    last["usage"] = usage(o);
    last["timings"] = timings(o);
    emit(last);
  } else {
    ojson last = final_body(kind, o);
    last["content"] = "";
    last["tokens"] = ojson::array();
    emit(last);
    return out;  // /completion has no [DONE]
  }
  return out + "data: [DONE]\n\n";
}

size_t common_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
  return n;
}

}  // namespace

std::optional<ErrorReply> App::parse_task(const json& body, Kind kind, Task& t) const {
  const auto bad = [](std::string m) { return ErrorReply{400, std::move(m), "invalid_request_error"}; };
  if (!body.is_object()) return bad("request body must be a JSON object");
  t.kind = kind;
  if (kind == Kind::oai_chat || kind == Kind::anthropic) {
    if (!body.contains("messages") || !body.at("messages").is_array()) return bad("'messages' is required");
    t.prompt = render_chat(kind == Kind::oai_chat ? body.at("messages") : api_messages(body, kind));
  } else if (kind == Kind::responses) {
    if (!body.contains("input")) return bad("'input' is required");
    t.prompt = render_chat(api_messages(body, kind));
  } else {
    const json p = body.value("prompt", json());
    if (p.is_string()) t.prompt = p.get<std::string>();
    else if (p.is_array()) for (const auto& e : p) t.prompt += e.is_string() ? e.get<std::string>() : e.dump();
    else return bad("\"prompt\" must be provided");
  }
  t.prompt_tokens = tokenize(t.prompt);
  t.stream = body.value("stream", false);
  t.include_usage = body.contains("stream_options") && body.at("stream_options").value("include_usage", false);
  for (const char* k : {"n_predict", "max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    if (body.contains(k) && body.at(k).is_number_integer()) t.n_predict = body.at(k).get<int>();
  }
  if (body.contains("grammar") && body.at("grammar").is_string() && !body.at("grammar").get<std::string>().empty()) {
    t.grammar = body.at("grammar").get<std::string>();
    try {
      grammar_alternatives(*t.grammar);
    } catch (const std::invalid_argument&) {
      return bad("Failed to parse grammar");
    }
  }
  if (body.contains("json_schema") && body.at("json_schema").is_object()) t.schema = body.at("json_schema");
  const json rf = body.value("response_format", json());
  if (rf.is_object()) {
    const std::string type = rf.value("type", "");
    if (type == "json_schema") t.schema = rf.value("json_schema", json::object()).value("schema", json::object());
    else if (type == "json_object") t.schema = rf.value("schema", json{{"type", "object"}});
    else if (type != "text") return bad("response_format type must be one of \"text\" or \"json_object\", but got: " + type);
  }
  for (const auto& a : model_->adapters) t.lora.push_back(a.scale);
  if (body.contains("lora")) {
    if (!body.at("lora").is_array()) return bad("Error: 'lora' must be an array of objects with 'id' and 'scale' fields");
    std::fill(t.lora.begin(), t.lora.end(), 0.0f);  // adapters not listed default to scale 0
    for (const auto& e : body.at("lora")) {
      const int id = e.is_object() ? e.value("id", -1) : -1;
      if (id >= 0 && id < static_cast<int>(t.lora.size())) t.lora[static_cast<size_t>(id)] = e.value("scale", 0.0f);
    }
  }
  if (body.contains("seed") && body.at("seed").is_number_integer()) t.seed = body.at("seed").get<std::int64_t>();
  t.req_model = body.value("model", "");
  if (body.contains("id_slot") && body.at("id_slot").is_number_integer()) t.id_slot = body.at("id_slot").get<int>();
  return std::nullopt;
}

std::string App::answer_for(const Task& t) {
  if (auto scripted = script_.match(opt_.aliases, t.req_model, t.prompt)) return *scripted;
  const std::uint64_t d = digest(GenInput{t.prompt, t.lora, t.seed});
  if (t.schema) return schema_instance(*t.schema, d);
  if (t.grammar) {
    const auto alts = grammar_alternatives(*t.grammar);
    if (alts && !alts->empty()) return (*alts)[d % alts->size()];
    logf(Level::warn, "srv  %s: stand-in: grammar shape not modelled, answering free text", fn12("operator()").c_str());
  }
  return free_text(d);
}

net::awaitable<void> App::sleep_for(std::chrono::microseconds d) {
  if (d.count() <= 0) co_return;
  net::steady_timer t(ioc_, d);
  boost::system::error_code ec;
  co_await t.async_wait(net::redirect_error(net::use_awaitable, ec));
}

net::awaitable<Slot*> App::acquire_slot(int id_slot, const std::vector<std::string>& prompt) {
  bool counted = false;
  for (;;) {
    Slot* best = nullptr;
    size_t best_len = 0;
    for (auto& s : slots_) {
      if (s.busy || (id_slot >= 0 && s.id != id_slot)) continue;
      const size_t len = common_prefix(s.cache, prompt);
      if (!best || len > best_len) { best = &s; best_len = len; }
    }
    if (best) {
      metrics_.deferred -= counted ? 1 : 0;
      best->busy = true;
      co_return best;
    }
    if (!counted) { metrics_.deferred++; counted = true; }
    boost::system::error_code ec;  // woken by release_slot() cancelling the wait
    co_await slot_freed_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

void App::release_slot(Slot& slot) {
  slot.busy = false;
  slot_freed_.expires_at(net::steady_timer::time_point::max());  // wakes every waiter
}

net::awaitable<bool> App::drain(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (inflight_ > 0 && std::chrono::steady_clock::now() < deadline) {
    net::steady_timer bound(ioc_, deadline);
    bound.async_wait([this](boost::system::error_code ec) {
      if (!ec) idle_.expires_at(net::steady_timer::time_point::max());  // deadline: wake the waiter
    });
    boost::system::error_code ec;
    co_await idle_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  co_return inflight_ == 0;
}

net::awaitable<void> App::completion(const HttpRequest& req, Responder& res, Kind kind) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    {
      const ErrorReply e_{500, "[json.exception.parse_error.101] parse error: invalid JSON body", "server_error"};
      co_await send_error(res, e_);
      co_return;
    }
  }
  Task task;
  if (auto err = parse_task(body, kind, task)) { co_await send_error(res, *err); co_return; }
  if (opt_.fake_crash_after && completions_seen_ >= *opt_.fake_crash_after) fake_abort("fake crash after N requests");
  completions_seen_++;

  inflight_++;
  struct InflightGuard {  // also runs when the coroutine frame is destroyed at shutdown
    App* app;
    ~InflightGuard() {
      if (--app->inflight_ == 0) app->idle_.expires_at(net::steady_timer::time_point::max());
    }
  } guard{this};
  Slot* slot = co_await acquire_slot(task.id_slot, task.prompt_tokens);
  struct SlotGuard {
    App* app;
    Slot* slot;
    ~SlotGuard() { app->release_slot(*slot); }
  } slot_guard{this, slot};

  const int n_prompt = static_cast<int>(task.prompt_tokens.size());
  if (n_prompt >= static_cast<int>(model_->n_ctx_slot)) {
    ErrorReply e{400, "request (" + std::to_string(n_prompt) + " tokens) exceeds the available context size (" +
                          std::to_string(model_->n_ctx_slot) + " tokens), try increasing it",
                 "exceed_context_size_error"};
    ojson j = {{"error", {{"code", 400}, {"message", e.message}, {"type", e.type},
                          {"n_prompt_tokens", n_prompt}, {"n_ctx", model_->n_ctx_slot}}}};
    {
    const std::string body_ = j.dump();
    co_await res.send(400, body_);
    co_return;
  }
  }
  co_await run_task(task, *slot, res);
}

net::awaitable<void> App::run_task(Task& task, Slot& slot, Responder& res) {
  Outcome o;
  o.id = random_id(task.kind == Kind::oai_chat ? "chatcmpl-" : task.kind == Kind::anthropic ? "msg_"
                   : task.kind == Kind::responses ? "resp_" : "cmpl-");
  o.model = opt_.model_name();
  o.lora = task.lora;
  o.id_slot = slot.id;
  o.n_prompt = static_cast<int>(task.prompt_tokens.size());
  // Like llama.cpp, a full cache hit still re-evaluates the last prompt token.
  o.n_cached = std::min<int>(static_cast<int>(common_prefix(slot.cache, task.prompt_tokens)), std::max(0, o.n_prompt - 1));
  slot.id_task = next_task_id_++;
  slot.n_prompt = o.n_prompt;
  slot.n_cached = o.n_cached;
  logf(Level::trace, "slot %s: id %2d | task %d | processing task", fn12("launch_slot_with_task").c_str(), slot.id, slot.id_task);

  const std::int64_t prefill_us = static_cast<std::int64_t>(o.n_prompt - o.n_cached) * opt_.fake_prefill_us_per_token;
  co_await sleep_for(std::chrono::microseconds(prefill_us));
  o.prompt_ms = static_cast<double>(prefill_us) / 1000.0;

  std::vector<std::string> pieces = tokenize(answer_for(task));
  if (task.n_predict >= 0 && pieces.size() > static_cast<size_t>(task.n_predict)) {
    pieces.resize(static_cast<size_t>(task.n_predict));
    o.stopped_by_eos = false;
  }
  const size_t crash_at = std::min<size_t>(2, pieces.size() / 2);
  const auto t0 = std::chrono::steady_clock::now();
  bool client_alive = true;
  if (task.stream) client_alive = co_await res.start_stream("text/event-stream");
  for (size_t i = 0; i < pieces.size() && client_alive; i++) {
    co_await sleep_for(std::chrono::milliseconds(opt_.fake_token_ms));
    o.tokens.push_back(pieces[i]);
    if (task.stream) client_alive = co_await res.write_chunk(token_events(task.kind, o, pieces[i], i));
    if (opt_.fake_crash_mid_stream && i == crash_at) fake_abort("fake crash mid stream");
  }
  o.predicted_ms = std::max(0.001, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

  slot.cache = task.prompt_tokens;
  slot.cache.insert(slot.cache.end(), o.tokens.begin(), o.tokens.end());
  metrics_.prompt_tokens += static_cast<std::uint64_t>(o.n_prompt - o.n_cached);
  metrics_.prompt_cached += static_cast<std::uint64_t>(o.n_cached);
  metrics_.prompt_s += o.prompt_ms / 1e3;
  metrics_.predicted_tokens += o.tokens.size();
  metrics_.predicted_s += o.predicted_ms / 1e3;
  metrics_.n_decode += 1 + o.tokens.size();
  metrics_.n_tokens_max = std::max<std::uint64_t>(metrics_.n_tokens_max, slot.cache.size());
  logf(Level::trace, "slot %s: id %2d | task %d | stop processing: n_tokens = %zu, truncated = 0", fn12("release").c_str(),
       slot.id, slot.id_task, slot.cache.size());

  if (!task.stream) {
    const std::string body_ = final_body(task.kind, o).dump();
    co_await res.send(200, body_);
    co_return;
  }
  if (client_alive && co_await res.write_chunk(final_events(task.kind, o, task.include_usage))) co_await res.end_stream();
}

}  // namespace standin
