#include "http/ollama.hpp"

#include <algorithm>
#include <ctime>

#include "common/bounded_json.hpp"
#include "http/bodies.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

Error bad(std::string m) { return make_error(Errc::bad_request, std::move(m)); }

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// options -> OpenAI/llama-server sampling fields.
Result<json> map_options(const json& opts, int ctx, json out) {
  if (opts.is_null()) return out;
  if (!opts.is_object()) return bad("\"options\" must be an object");
  if (opts.contains("num_ctx")) {
    const auto& n = opts["num_ctx"];
    if (!n.is_number_integer()) return bad("options.num_ctx must be an integer");
    if (n.get<std::int64_t>() > ctx)
      return bad("options.num_ctx " + std::to_string(n.get<std::int64_t>()) + " is above this model's context (" +
                 std::to_string(ctx) + " tokens, the profile's ctx); raise ctx in the profile instead");
  }
  static const std::pair<const char*, const char*> kSame[] = {
      {"temperature", "temperature"}, {"top_p", "top_p"}, {"top_k", "top_k"}, {"min_p", "min_p"},
      {"seed", "seed"}, {"num_predict", "max_tokens"}, {"stop", "stop"}, {"repeat_penalty", "repeat_penalty"},
      {"presence_penalty", "presence_penalty"}, {"frequency_penalty", "frequency_penalty"},
      {"typical_p", "typical_p"}, {"repeat_last_n", "repeat_last_n"}};
  for (const auto& [from, to] : kSame)
    if (opts.contains(from) && !opts[from].is_null()) out[to] = opts[from];
  return out;
}

// format: "json" or a JSON schema -> response_format (llama-server turns it into a grammar).
Result<json> map_format(const json& fmt, json out) {
  if (fmt.is_null() || (fmt.is_string() && fmt.get<std::string>().empty())) return out;
  if (fmt.is_string() && fmt.get<std::string>() == "json") {
    out["response_format"] = {{"type", "json_object"}};
    return out;
  }
  if (fmt.is_object()) {
    out["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", fmt}}}};
    return out;
  }
  return bad("\"format\" must be \"json\" or a JSON schema object");
}

// Ollama chat messages -> OpenAI (images are not supported by the door; tool calls carry over).
Result<json> map_messages(const json& msgs) {
  if (!msgs.is_array()) return bad("\"messages\" must be an array");
  json out = json::array();
  for (const auto& m : msgs) {
    if (!m.is_object()) return bad("each message must be an object");
    json o = {{"role", m.value("role", "user")}, {"content", m.value("content", json(""))}};
    if (m.contains("images") && !m["images"].empty()) return bad("images are not supported through the door");
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      json calls = json::array();
      for (const auto& tc : m["tool_calls"]) {
        const auto f = tc.value("function", json::object());
        calls.push_back({{"type", "function"}, {"id", "call_" + std::to_string(calls.size())},
                         {"function", {{"name", f.value("name", "")}, {"arguments", dump(f.value("arguments", json::object()))}}}});
      }
      o["tool_calls"] = calls;
    }
    out.push_back(std::move(o));
  }
  return out;
}

json tool_calls_of(const json& message) {
  json calls = json::array();
  for (const auto& tc : message.value("tool_calls", json::array())) {
    const auto f = tc.value("function", json::object());
    auto args = parse_json_bounded(f.value("arguments", std::string("{}")));
    calls.push_back({{"function", {{"name", f.value("name", "")}, {"arguments", args ? args.value() : json::object()}}}});
  }
  return calls;
}

std::int64_t ns(const json& timings, const char* field) {
  const auto v = timings.is_object() ? timings.value(field, json()) : json();
  return v.is_number() ? static_cast<std::int64_t>(v.get<double>() * 1e6) : 0;
}

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

// The counters every final Ollama answer carries: counts from `usage` (else the child's timings),
// durations as ollama_answer documents.
void add_counts(json& out, const json& usage, const json& timings, const CallTimes* times) {
  const auto u = usage.is_object() ? usage : json::object();
  const auto t = timings.is_object() ? timings : json::object();
  out["prompt_eval_count"] = u.value("prompt_tokens", t.value("prompt_n", 0));
  out["eval_count"] = u.value("completion_tokens", t.value("predicted_n", 0));
  const auto prompt = ns(timings, "prompt_ms"), eval = ns(timings, "predicted_ms");
  out["prompt_eval_duration"] = prompt;
  out["eval_duration"] = eval;
  const std::int64_t load = times ? times->load_ms * 1000000 : 0;
  out["load_duration"] = load;
  std::int64_t total = load + prompt + eval;  // at least what is accounted for
  if (times && times->arrived != std::chrono::steady_clock::time_point{})
    total = std::max<std::int64_t>(total, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - times->arrived).count());
  out["total_duration"] = total;
}

std::string done_reason(const json& fr) { return fr.is_string() ? fr.get<std::string>() : "stop"; }

}  // namespace

std::string rfc3339(std::int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string ollama_target(OllamaKind kind, const json& body) {
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) return "/v1/embeddings";
  if (kind == OllamaKind::generate && body.value("raw", false) == true) return "/v1/completions";
  return "/v1/chat/completions";
}

bool ollama_streams(OllamaKind kind, const json& body) {
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) return false;
  const auto s = body.value("stream", json(true));
  return !s.is_boolean() || s.get<bool>();
}

Result<json> ollama_to_openai(OllamaKind kind, const json& body, const std::string& model, int ctx) {
  if (body.contains("keep_alive")) {  // honoured by the door (ollama.cpp), never sent to the child
    if (auto k = parse_keep_alive(body["keep_alive"]); !k) return k.error();
  }
  json out = {{"model", model}};
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) {
    const auto in = body.value(kind == OllamaKind::embed ? "input" : "prompt", json());
    if (!in.is_string() && !in.is_array()) return bad(kind == OllamaKind::embed ? "\"input\" must be a string or an array of strings" : "\"prompt\" must be a string");
    out["input"] = in;
    return out;
  }
  const bool stream = ollama_streams(kind, body);
  out["stream"] = stream;
  if (stream) out["stream_options"] = {{"include_usage", true}};
  if (kind == OllamaKind::chat) {
    auto msgs = map_messages(body.value("messages", json()));
    if (!msgs) return msgs.error();
    out["messages"] = std::move(msgs.value());
    if (body.contains("tools") && body["tools"].is_array() && !body["tools"].empty()) out["tools"] = body["tools"];
  } else {
    const auto prompt = body.value("prompt", json(""));
    if (!prompt.is_string()) return bad("\"prompt\" must be a string");
    if (body.value("raw", false) == true) {
      out["prompt"] = prompt;
    } else {
      json msgs = json::array();
      if (body.contains("system") && body["system"].is_string()) msgs.push_back({{"role", "system"}, {"content", body["system"]}});
      msgs.push_back({{"role", "user"}, {"content", prompt}});
      out["messages"] = std::move(msgs);
    }
    if (body.contains("images") && !body["images"].empty()) return bad("images are not supported through the door");
  }
  auto with_format = map_format(body.value("format", json()), std::move(out));
  if (!with_format) return with_format.error();
  return map_options(body.value("options", json()), ctx, std::move(with_format.value()));
}

std::string ollama_answer(OllamaKind kind, const std::string& openai_body, const std::string& model,
                          const CallTimes* times) {
  const auto parsed = parse_json_bounded(openai_body);
  const json a = parsed && parsed->is_object() ? parsed.value() : json::object();
  json out = {{"model", model}, {"created_at", rfc3339(now_s())}};
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) {
    json vecs = json::array();
    for (const auto& d : a.value("data", json::array())) vecs.push_back(d.value("embedding", json::array()));
    if (kind == OllamaKind::embeddings) return dump({{"embedding", vecs.empty() ? json::array() : vecs[0]}});
    out["embeddings"] = std::move(vecs);
    add_counts(out, a.value("usage", json()), json(), times);
    out.erase("eval_count");  // an embedding generates nothing
    out.erase("eval_duration");
    out.erase("prompt_eval_duration");
    return dump(out);
  }
  const auto choices = a.value("choices", json::array());
  const json choice = choices.empty() ? json::object() : choices[0];
  if (choice.contains("message")) {
    const auto& m = choice["message"];
    const auto content = m.value("content", json(""));
    const std::string text = content.is_string() ? content.get<std::string>() : "";
    if (kind == OllamaKind::chat) {
      out["message"] = {{"role", "assistant"}, {"content", text}};
      if (m.contains("tool_calls")) out["message"]["tool_calls"] = tool_calls_of(m);
    } else {
      out["response"] = text;
    }
  } else {
    out["response"] = choice.value("text", "");
  }
  out["done"] = true;
  out["done_reason"] = done_reason(choice.value("finish_reason", json()));
  add_counts(out, a.value("usage", json()), a.value("timings", json()), times);
  return dump(out);
}

std::string OllamaStream::event(const json& j) {
  if (j.contains("error")) return dump({{"error", j["error"].is_object() ? j["error"].value("message", dump(j["error"])) : dump(j["error"])}}) + "\n";
  if (j.contains("usage") && j["usage"].is_object()) usage_ = j["usage"];
  if (j.contains("timings")) timings_ = j["timings"];
  const auto choices = j.value("choices", json::array());
  if (choices.empty() || !choices[0].is_object()) return {};
  const auto& c = choices[0];
  if (c.contains("finish_reason") && c["finish_reason"].is_string()) done_reason_ = c["finish_reason"];
  std::string piece;
  json calls;
  if (c.contains("delta")) {
    const auto d = c["delta"];
    if (d.contains("content") && d["content"].is_string()) piece = d["content"];
    if (d.contains("tool_calls")) calls = tool_calls_of(d);
  } else if (c.contains("text") && c["text"].is_string()) {
    piece = c["text"];
  }
  if (piece.empty() && calls.is_null()) return {};
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", false}};
  if (kind_ == OllamaKind::chat) {
    out["message"] = {{"role", "assistant"}, {"content", piece}};
    if (!calls.is_null()) out["message"]["tool_calls"] = calls;
  } else {
    out["response"] = piece;
  }
  return dump(out) + "\n";
}

std::string OllamaStream::thinking_line(const std::string& text) const {
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", false}};
  if (kind_ == OllamaKind::chat) out["message"] = {{"role", "assistant"}, {"content", ""}, {"thinking", text + "\n"}};
  else {
    out["response"] = "";
    out["thinking"] = text + "\n";
  }
  return dump(out) + "\n";
}

std::string OllamaStream::final_line() {
  done_ = true;
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", true}, {"done_reason", done_reason_}};
  if (kind_ == OllamaKind::chat) out["message"] = {{"role", "assistant"}, {"content", ""}};
  else out["response"] = "";
  add_counts(out, usage_, timings_, times_.get());
  return dump(out) + "\n";
}

std::string OllamaStream::feed(std::string_view sse) {
  buf_.append(sse);
  std::string out;
  for (auto end = buf_.find("\n\n"); end != std::string::npos && !done_; end = buf_.find("\n\n")) {
    const std::string ev = buf_.substr(0, end);
    buf_.erase(0, end + 2);
    const auto pos = ev.find("data: ");
    if (pos == std::string::npos) continue;  // comments, event: lines
    const auto data = std::string_view(ev).substr(pos + 6);
    if (data == "[DONE]") {
      out += final_line();
      break;
    }
    if (auto j = parse_json_bounded(data); j && j->is_object()) out += event(*j);
  }
  return out;
}

}  // namespace kevlaya::http
