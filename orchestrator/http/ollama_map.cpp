#include "http/ollama.hpp"

#include <algorithm>
#include <ctime>
#include <utility>

#include "common/bounded_json.hpp"
#include "common/bytes.hpp"
#include "http/bodies.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

Error bad(std::string m) { return make_error(Errc::bad_request, std::move(m)); }

// options -> OpenAI/llama-server sampling fields, each of Ollama's type (a wrong one: 400 naming it).
Result<json> map_options(const json& opts, int ctx, json out) {
  if (opts.is_null()) return out;
  if (!opts.is_object()) return bad("\"options\" must be an object");
  auto n = typed_field(opts, "num_ctx", JsonKind::integer, "options");
  if (!n) return n.error();
  if (*n && (*n)->get<std::int64_t>() > ctx)
    return bad("options.num_ctx " + std::to_string((*n)->get<std::int64_t>()) + " is above this model's context (" +
               std::to_string(ctx) + " tokens, the profile's ctx); raise ctx in the profile instead");
  // Numbers, as Ollama reads them (an integer option takes 40.0 too); llama-server judges the values.
  static const std::pair<const char*, const char*> kSame[] = {
      {"temperature", "temperature"}, {"top_p", "top_p"}, {"top_k", "top_k"}, {"min_p", "min_p"}, {"seed", "seed"},
      {"num_predict", "max_tokens"}, {"repeat_penalty", "repeat_penalty"}, {"presence_penalty", "presence_penalty"},
      {"frequency_penalty", "frequency_penalty"}, {"typical_p", "typical_p"}, {"repeat_last_n", "repeat_last_n"}};
  for (const auto& [from, to] : kSame) {
    auto v = typed_field(opts, from, JsonKind::number, "options");
    if (!v) return v.error();
    if (*v) out[to] = **v;
  }
  if (const auto it = opts.find("stop"); it != opts.end() && !it->is_null()) {
    const bool strings = it->is_string() || (it->is_array() && std::all_of(it->begin(), it->end(), [](const json& x) { return x.is_string(); }));
    if (!strings) return bad("\"options.stop\" must be a string or an array of strings");
    out["stop"] = *it;
  }
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

// One Ollama tool call -> OpenAI's (`where` names it in errors).
Result<json> map_tool_call(const json& tc, std::size_t n, const std::string& where) {
  if (!tc.is_object()) return bad("\"" + where + "\" must be an object");
  auto f = typed_field(tc, "function", JsonKind::object, where);
  if (!f) return f.error();
  const json fn = *f ? **f : json::object();
  auto name = typed_field(fn, "name", JsonKind::string, where + ".function");
  if (!name) return name.error();
  const auto args = fn.find("arguments");
  if (args != fn.end() && !args->is_null() && !args->is_object() && !args->is_string())
    return bad("\"" + where + ".function.arguments\" must be an object");
  const std::string text = args == fn.end() || args->is_null() ? "{}" : args->is_string() ? args->get<std::string>() : dump_json(*args);
  return json{{"type", "function"}, {"id", "call_" + std::to_string(n)},
              {"function", {{"name", *name ? **name : json("")}, {"arguments", text}}}};
}

// One Ollama chat message -> OpenAI's (images are not supported by the door; tool calls carry over).
Result<json> map_message(const json& m, const std::string& where) {
  if (!m.is_object()) return bad("\"" + where + "\" must be an object");
  auto role = typed_field(m, "role", JsonKind::string, where);
  if (!role) return role.error();
  auto content = typed_field(m, "content", JsonKind::string, where);
  if (!content) return content.error();
  auto images = typed_field(m, "images", JsonKind::array, where);
  if (!images) return images.error();
  if (*images && !(*images)->empty()) return bad("images are not supported through the door");
  auto calls = typed_field(m, "tool_calls", JsonKind::array, where);
  if (!calls) return calls.error();
  json o = {{"role", *role ? **role : json("user")}, {"content", *content ? **content : json("")}};
  if (*calls) {
    json out = json::array();
    for (std::size_t i = 0; i < (*calls)->size(); ++i) {
      auto tc = map_tool_call((**calls)[i], i, where + ".tool_calls[" + std::to_string(i) + "]");
      if (!tc) return tc.error();
      out.push_back(std::move(tc.value()));
    }
    o["tool_calls"] = std::move(out);
  }
  return o;
}

Result<json> map_messages(const json& msgs) {
  if (!msgs.is_array()) return bad("\"messages\" must be an array");
  json out = json::array();
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    auto m = map_message(msgs[i], "messages[" + std::to_string(i) + "]");
    if (!m) return m.error();
    out.push_back(std::move(m.value()));
  }
  return out;
}

// A member of a child's answer, or null: what a child sends is read without a throw, whatever its types.
const json& member(const json& o, const char* key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  const auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

const json& first(const json& v) {
  static const json kNull;
  return v.is_array() && !v.empty() ? v.front() : kNull;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : ""; }

json count_of(const json& v) { return v.is_number() ? v : json(0); }

json tool_calls_of(const json& message) {
  json calls = json::array();
  const auto& list = member(message, "tool_calls");
  if (!list.is_array()) return calls;
  for (const auto& tc : list) {
    const auto& f = member(tc, "function");
    const auto& a = member(f, "arguments");
    auto args = parse_json_bounded(a.is_string() ? a.get<std::string>() : "{}");
    calls.push_back({{"function", {{"name", text_of(member(f, "name"))}, {"arguments", args ? args.value() : json::object()}}}});
  }
  return calls;
}

// Joins a streamed tool-call delta into `calls` (OpenAI streams the name first, then the
// arguments in pieces, each entry naming its call's `index`).
void join_call_delta(json& calls, const json& d) {
  const auto& i = member(d, "index");
  const std::size_t at = i.is_number_unsigned() ? i.get<std::size_t>() : calls.size();
  if (at > calls.size() || at > 1024) return;  // a gap or a runaway index: not a call of this answer
  if (at == calls.size()) calls.push_back({{"name", ""}, {"arguments", ""}});
  const auto& f = member(d, "function");
  calls[at]["name"] = calls[at]["name"].get<std::string>() + text_of(member(f, "name"));
  calls[at]["arguments"] = calls[at]["arguments"].get<std::string>() + text_of(member(f, "arguments"));
}

// Joined calls in Ollama's shape (arguments an object), as Ollama streams them: whole, in one line.
json whole_calls(const json& calls) {
  json out = json::array();
  for (const auto& c : calls) {
    auto args = parse_json_bounded(c["arguments"].get<std::string>());
    out.push_back({{"function", {{"name", c["name"]}, {"arguments", args && args->is_object() ? *args : json::object()}}}});
  }
  return out;
}

std::int64_t ns(const json& timings, const char* field) {
  const auto& v = member(timings, field);
  return v.is_number() ? static_cast<std::int64_t>(v.get<double>() * 1e6) : 0;
}

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

// The counters every final Ollama answer carries: counts from `usage` (else the child's timings),
// durations as ollama_answer documents.
void add_counts(json& out, const json& usage, const json& timings, const CallTimes* times) {
  const auto& prompt_n = member(usage, "prompt_tokens");
  const auto& eval_n = member(usage, "completion_tokens");
  out["prompt_eval_count"] = count_of(prompt_n.is_null() ? member(timings, "prompt_n") : prompt_n);
  out["eval_count"] = count_of(eval_n.is_null() ? member(timings, "predicted_n") : eval_n);
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

// Ollama's words: "stop" and "length" (a call that ends in tool calls is "stop" there too).
std::string done_reason(const json& fr) {
  if (!fr.is_string() || fr.get<std::string>() == "tool_calls") return "stop";
  return fr.get<std::string>();
}

bool is_true(const json& body, const char* key) {
  const auto it = body.is_object() ? body.find(key) : body.end();
  return it != body.end() && it->is_boolean() && it->get<bool>();
}

// The top-level fields the door reads, each of Ollama's type (a wrong one: 400 naming it).
Status check_top_fields(OllamaKind kind, const json& body) {
  static const std::pair<const char*, JsonKind> kFields[] = {
      {"model", JsonKind::string}, {"name", JsonKind::string}, {"stream", JsonKind::boolean}, {"raw", JsonKind::boolean},
      {"system", JsonKind::string}, {"images", JsonKind::array}, {"tools", JsonKind::array}};
  for (const auto& [key, type] : kFields) {
    if (kind != OllamaKind::generate && (std::string_view(key) == "raw" || std::string_view(key) == "system")) continue;
    if (auto f = typed_field(body, key, type); !f) return f.error();
  }
  return ok_status();
}

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
  if (kind == OllamaKind::generate && is_true(body, "raw")) return "/v1/completions";
  return "/v1/chat/completions";
}

bool ollama_streams(OllamaKind kind, const json& body) {
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) return false;
  const auto s = body.is_object() ? body.find("stream") : body.end();
  return s == body.end() || !s->is_boolean() || s->get<bool>();
}

Result<json> ollama_to_openai(OllamaKind kind, const json& body, const std::string& model, int ctx) {
  if (body.contains("keep_alive")) {  // honoured by the door (ollama.cpp), never sent to the child
    if (auto k = parse_keep_alive(body["keep_alive"]); !k) return k.error();
  }
  if (auto st = check_top_fields(kind, body); !st) return st.error();
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
    if (body.contains("tools") && body["tools"].is_array() && !body["tools"].empty()) out["tools"] = body["tools"];  // checked above
  } else {
    const auto prompt = body.value("prompt", json(""));
    if (!prompt.is_string()) return bad("\"prompt\" must be a string");
    if (is_true(body, "raw")) {
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

std::string ollama_request_text(const json& mapped, std::string_view raw_body) {
  // Only a schema (format) or tools carry an order that matters: other bodies are not parsed again.
  const bool schema = mapped.contains("response_format") && mapped["response_format"].contains("json_schema");
  if (!schema && !mapped.contains("tools")) return dump_json(mapped);
  auto raw = parse_ordered_json_bounded(raw_body);  // checked already by the door's parse
  if (!raw || !raw->is_object()) return dump_json(mapped);
  nlohmann::ordered_json out = mapped;  // the door's own fields: their order does not matter
  if (const auto f = raw->find("format"); schema && f != raw->end() && f->is_object())
    out["response_format"]["json_schema"]["schema"] = *f;
  if (const auto t = raw->find("tools"); t != raw->end() && t->is_array() && out.contains("tools")) out["tools"] = *t;
  return dump_json(out);
}

std::string ollama_answer(OllamaKind kind, const std::string& openai_body, const std::string& model,
                          const CallTimes* times) {
  const auto parsed = parse_json_bounded(openai_body);
  const json a = parsed && parsed->is_object() ? parsed.value() : json::object();
  json out = {{"model", model}, {"created_at", rfc3339(now_s())}};
  if (kind == OllamaKind::embed || kind == OllamaKind::embeddings) {
    json vecs = json::array();
    const auto& data = member(a, "data");
    for (std::size_t i = 0; data.is_array() && i < data.size(); ++i) {
      const auto& e = member(data[i], "embedding");
      vecs.push_back(e.is_array() ? e : json::array());
    }
    if (kind == OllamaKind::embeddings) return dump_json(json{{"embedding", vecs.empty() ? json::array() : vecs[0]}});
    out["embeddings"] = std::move(vecs);
    add_counts(out, member(a, "usage"), json(), times);
    out.erase("eval_count");  // an embedding generates nothing
    out.erase("eval_duration");
    out.erase("prompt_eval_duration");
    return dump_json(out);
  }
  const auto& choice = first(member(a, "choices"));
  if (const auto& m = member(choice, "message"); m.is_object()) {
    const std::string text = text_of(member(m, "content"));
    if (kind == OllamaKind::chat) {
      out["message"] = {{"role", "assistant"}, {"content", text}};
      if (m.contains("tool_calls")) out["message"]["tool_calls"] = tool_calls_of(m);
    } else {
      out["response"] = text;
    }
  } else {
    out["response"] = text_of(member(choice, "text"));
  }
  out["done"] = true;
  out["done_reason"] = done_reason(member(choice, "finish_reason"));
  add_counts(out, member(a, "usage"), member(a, "timings"), times);
  return dump_json(out);
}

std::string OllamaStream::event(const json& j) {
  if (j.contains("error")) {
    const auto& e = j["error"];
    const auto& m = member(e, "message");
    return dump_json(json{{"error", m.is_string() ? m.get<std::string>() : dump_json(e)}}) + "\n";
  }
  if (j.contains("usage") && j["usage"].is_object()) usage_ = j["usage"];
  if (j.contains("timings")) timings_ = j["timings"];
  const auto& c = first(member(j, "choices"));
  if (!c.is_object()) return {};
  const bool finished = c.contains("finish_reason") && c["finish_reason"].is_string();
  if (finished) done_reason_ = done_reason(c["finish_reason"]);
  std::string piece;
  json calls;
  if (c.contains("delta")) {
    const auto& d = c["delta"];
    piece = text_of(member(d, "content"));
    // A call's deltas are joined and sent whole when the choice finishes: Ollama clients read each
    // tool_calls entry as a complete call.
    if (const auto& list = member(d, "tool_calls"); list.is_array())
      for (const auto& tc : list) join_call_delta(calls_, tc);
  } else if (c.contains("text") && c["text"].is_string()) {
    piece = c["text"];
  }
  if (finished && !calls_.empty()) {
    calls = whole_calls(calls_);
    calls_ = json::array();
  }
  if (piece.empty() && calls.is_null()) return {};
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", false}};
  if (kind_ == OllamaKind::chat) {
    out["message"] = {{"role", "assistant"}, {"content", piece}};
    if (!calls.is_null()) out["message"]["tool_calls"] = calls;
  } else {
    out["response"] = piece;
  }
  return dump_json(out) + "\n";
}

std::string OllamaStream::thinking_line(const std::string& text) const {
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", false}};
  if (kind_ == OllamaKind::chat) out["message"] = {{"role", "assistant"}, {"content", ""}, {"thinking", text + "\n"}};
  else {
    out["response"] = "";
    out["thinking"] = text + "\n";
  }
  return dump_json(out) + "\n";
}

std::string OllamaStream::final_line() {
  std::string pending;  // calls of a stream that ended without a finish_reason
  if (!calls_.empty() && kind_ == OllamaKind::chat) {
    json line = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", false},
                 {"message", {{"role", "assistant"}, {"content", ""}, {"tool_calls", whole_calls(calls_)}}}};
    pending = dump_json(line) + "\n";
    calls_ = json::array();
  }
  done_ = true;
  json out = {{"model", model_}, {"created_at", rfc3339(now_s())}, {"done", true}, {"done_reason", done_reason_}};
  if (kind_ == OllamaKind::chat) out["message"] = {{"role", "assistant"}, {"content", ""}};
  else out["response"] = "";
  add_counts(out, usage_, timings_, times_.get());
  return pending + dump_json(out) + "\n";
}

std::string OllamaStream::feed(std::string_view sse) {
  if (done_) return {};
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
  if (!done_ && buf_.size() > kMaxEventBytes) {  // one event past any real one: end with an error line
    buf_ = std::string();
    done_ = true;
    out += json{{"error", "the model's stream sent one event of over " + std::to_string(kMaxEventBytes >> 20) +
                              " MiB; the answer was cut"}}.dump() + "\n";
  }
  return out;
}

}  // namespace kevlaya::http
