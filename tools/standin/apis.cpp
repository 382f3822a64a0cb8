// The stand-in's other model APIs, with llama-server's paths and shapes (tools/server of b10470):
// Anthropic Messages, OpenAI Responses, token counting, /tokenize, /detokenize, embeddings
// (OpenAI and native), rerank, /infill and /apply-template. Generation reuses completion.cpp.
#include <algorithm>
#include <cmath>
#include <ctime>

#include <utility>

#include "app.hpp"

namespace standin {
namespace {

using json = nlohmann::json;

std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  return out;
}

std::string b64(const std::string& bytes) {
  static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (std::uint32_t(std::uint8_t(bytes[i])) << 16) | (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) |
                   std::uint8_t(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(n >> s) & 63];
  }
  if (i < bytes.size()) {
    std::uint32_t n = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
    out += k[(n >> 18) & 63];
    out += k[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A unit vector of n floats that depends only on the text (equal texts embed equally).
std::vector<float> embed(const std::string& text, int n) {
  std::vector<float> v(static_cast<std::size_t>(std::max(1, n)));
  double norm = 0;
  for (std::size_t i = 0; i < v.size(); i++) {
    v[i] = static_cast<float>(static_cast<double>(fnv1a(text, 1469598103934665603ull + i) % 2001) / 1000.0 - 1.0);
    norm += double(v[i]) * v[i];
  }
  norm = std::sqrt(std::max(norm, 1e-12));
  for (auto& x : v) x = static_cast<float>(x / norm);
  return v;
}

std::vector<std::string> inputs_of(const json& in) {
  std::vector<std::string> out;
  if (in.is_string()) out.push_back(in.get<std::string>());
  else if (in.is_array())
    for (const auto& e : in) out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

ojson usage_json(int n) { return ojson{{"prompt_tokens", n}, {"total_tokens", n}}; }

ErrorReply bad(std::string m) { return ErrorReply{400, std::move(m), "invalid_request_error"}; }

// /detokenize of tokenize_json's ids (bytes packed little-endian).
std::string detokenize_text(const json& tokens) {
  std::string text;
  for (const auto& t : tokens) {
    if (!t.is_number_integer()) continue;
    for (auto id = t.get<std::int64_t>(); id > 0; id >>= 8) text += static_cast<char>(id & 0xff);
  }
  return text;
}

}  // namespace

bool is_api_kind(Kind k) { return k == Kind::anthropic || k == Kind::responses; }

json api_messages(const json& body, Kind kind) {
  json out = json::array();
  const auto add = [&out](std::string role, const json& content) {
    out.push_back({{"role", std::move(role)}, {"content", content_text(content)}});
  };
  if (kind == Kind::anthropic) {
    if (body.contains("system")) add("system", body["system"]);
    for (const auto& m : body.value("messages", json::array())) add(m.value("role", "user"), m.value("content", json("")));
    return out;
  }
  if (body.contains("instructions") && body["instructions"].is_string()) add("system", body["instructions"]);
  const auto in = body.value("input", json());
  if (in.is_string()) add("user", in);
  else if (in.is_array())
    for (const auto& m : in)
      if (m.is_object()) add(m.value("role", "user"), m.value("content", json("")));
  return out;
}

ojson api_final_body(Kind kind, const GenView& g) {
  if (kind == Kind::anthropic)
    return ojson{{"id", g.id}, {"type", "message"}, {"role", "assistant"},
                 {"content", {{{"type", "text"}, {"text", g.text}}}}, {"model", g.model},
                 {"stop_reason", g.eos ? "end_turn" : "max_tokens"}, {"stop_sequence", nullptr},
                 {"usage", {{"input_tokens", g.n_prompt}, {"output_tokens", g.n_out}}}};
  return ojson{{"id", g.id}, {"object", "response"}, {"created_at", static_cast<std::int64_t>(std::time(nullptr))},
               {"status", "completed"}, {"model", g.model},
               {"output", {{{"type", "message"}, {"id", "msg_" + g.id}, {"status", "completed"}, {"role", "assistant"},
                            {"content", {{{"type", "output_text"}, {"text", g.text}, {"annotations", ojson::array()}}}}}}},
               {"usage", {{"input_tokens", g.n_prompt}, {"output_tokens", g.n_out},
                          {"total_tokens", g.n_prompt + g.n_out}}}};
}

namespace {
std::string ev(const char* name, const ojson& data) { return std::string("event: ") + name + "\ndata: " + data.dump() + "\n\n"; }
}  // namespace

std::string api_token_events(Kind kind, const GenView& g, const std::string& piece, std::size_t index) {
  std::string out;
  if (kind == Kind::anthropic) {
    if (index == 0) {
      ojson start = api_final_body(kind, g);
      start["content"] = ojson::array();
      start["stop_reason"] = nullptr;
      out += ev("message_start", {{"type", "message_start"}, {"message", start}});
      out += ev("content_block_start", {{"type", "content_block_start"}, {"index", 0},
                                        {"content_block", {{"type", "text"}, {"text", ""}}}});
    }
    return out + ev("content_block_delta", {{"type", "content_block_delta"}, {"index", 0},
                                            {"delta", {{"type", "text_delta"}, {"text", piece}}}});
  }
  const std::string item = "msg_" + g.id;
  if (index == 0) {
    const ojson resp = {{"id", g.id}, {"object", "response"}, {"status", "in_progress"}, {"model", g.model},
                        {"output", ojson::array()}};
    out += ev("response.created", {{"type", "response.created"}, {"response", resp}});
    out += ev("response.in_progress", {{"type", "response.in_progress"}, {"response", resp}});
    out += ev("response.output_item.added",
              {{"type", "response.output_item.added"}, {"output_index", 0},
               {"item", {{"content", ojson::array()}, {"id", item}, {"role", "assistant"}, {"status", "in_progress"}, {"type", "message"}}}});
    out += ev("response.content_part.added", {{"type", "response.content_part.added"}, {"item_id", item}, {"output_index", 0},
                                              {"content_index", 0}, {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}}}});
  }
  return out + ev("response.output_text.delta", {{"type", "response.output_text.delta"}, {"item_id", item}, {"output_index", 0},
                                                 {"content_index", 0}, {"delta", piece}});
}

std::string api_final_events(Kind kind, const GenView& g) {
  if (kind == Kind::anthropic)
    return (g.n_out == 0 ? api_token_events(kind, g, "", 0) : "") +
           ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}) +
           ev("message_delta", {{"type", "message_delta"}, {"delta", {{"stop_reason", g.eos ? "end_turn" : "max_tokens"}, {"stop_sequence", nullptr}}},
                                {"usage", {{"output_tokens", g.n_out}}}}) +
           ev("message_stop", {{"type", "message_stop"}});
  const std::string item = "msg_" + g.id;
  const ojson full = api_final_body(kind, g);
  std::string out = g.n_out == 0 ? api_token_events(kind, g, "", 0) : "";
  out += ev("response.output_text.done", {{"type", "response.output_text.done"}, {"item_id", item}, {"output_index", 0},
                                          {"content_index", 0}, {"text", g.text}});
  out += ev("response.content_part.done", {{"type", "response.content_part.done"}, {"item_id", item}, {"output_index", 0},
                                           {"content_index", 0}, {"part", full["output"][0]["content"][0]}});
  out += ev("response.output_item.done", {{"type", "response.output_item.done"}, {"output_index", 0}, {"item", full["output"][0]}});
  return out + ev("response.completed", {{"type", "response.completed"}, {"response", full}});
}

// Routes not handled by routes.cpp; false when `req` is none of them.
net::awaitable<bool> App::route_api(const HttpRequest& req, Responder& res) {
  const std::string& p = req.path;
  if (req.method != "POST") co_return false;
  if (p == "/v1/messages") { co_await completion(req, res, Kind::anthropic); co_return true; }
  if (p == "/v1/responses" || p == "/responses") { co_await completion(req, res, Kind::responses); co_return true; }
  if (p == "/infill") {
    HttpRequest r = req;  // llama-server's FIM prompt, simplified: prefix + prompt + suffix
    const json b = json::parse(req.body, nullptr, false);
    if (b.is_object()) {
      json nb = b;
      nb["prompt"] = b.value("input_prefix", "") + b.value("prompt", "") + b.value("input_suffix", "");
      r.body = nb.dump();
    }
    co_await completion(r, res, Kind::native);
    co_return true;
  }
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    const ErrorReply e_{500, "[json.exception.parse_error.101] parse error: invalid JSON body", "server_error"};
    co_await send_error(res, e_);
    co_return true;
  }
  std::optional<std::pair<int, std::string>> reply;  // status, body
  std::optional<ErrorReply> err;
  if (p == "/v1/messages/count_tokens" || p == "/v1/responses/input_tokens" || p == "/responses/input_tokens" ||
      p == "/v1/chat/completions/input_tokens" || p == "/chat/completions/input_tokens") {
    const Kind k = p.find("messages") != std::string::npos ? Kind::anthropic
                   : p.find("responses") != std::string::npos ? Kind::responses : Kind::oai_chat;
    const json msgs = k == Kind::oai_chat ? body.value("messages", json::array()) : api_messages(body, k);
    ojson out = {{"input_tokens", tokenize(render_prompt(msgs)).size()}};
    if (k == Kind::responses) out["object"] = "response.input_tokens";
    reply = {200, out.dump()};
  } else if (p == "/tokenize") {
    reply = {200, tokenize_json(body).dump()};
  } else if (p == "/detokenize") {
    reply = {200, ojson{{"content", detokenize_text(body.value("tokens", json::array()))}}.dump()};
  } else if (p == "/apply-template") {
    reply = {200, ojson{{"prompt", render_prompt(body.value("messages", json::array()))}}.dump()};
  } else if (p == "/v1/embeddings" || p == "/embeddings" || p == "/embedding") {
    if (!opt_.embeddings) err = ErrorReply{501, "This server does not support embeddings. Start it with `--embeddings`", "not_supported_error"};
    else if (p == "/v1/embeddings" && !body.contains("content") && opt_.pooling == "none")
      err = bad("Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    else reply = embeddings_reply(body, p == "/v1/embeddings" && !body.contains("content"), err);
  } else if (p == "/v1/rerank" || p == "/rerank" || p == "/v1/reranking" || p == "/reranking") {
    if (!opt_.reranking) err = ErrorReply{501, "This server does not support reranking. Start it with `--reranking`", "not_supported_error"};
    else reply = rerank_reply(body, err);
  } else {
    co_return false;
  }
  if (err) co_await send_error(res, *err);
  else co_await res.send(reply->first, reply->second);
  co_return true;
}

// Token ids are the piece's bytes packed little-endian, 7 bytes at most per token (longer pieces
// are split), so any stand-in process detokenizes any other's ids (a real model's vocabulary is
// fixed too).
ojson App::tokenize_json(const json& body) {
  ojson toks = ojson::array();
  for (const auto& word : tokenize(body.value("content", ""))) {
    for (std::size_t at = 0; at < word.size(); at += 7) {
      const std::string piece = word.substr(at, 7);
      std::int64_t id = 0;
      for (std::size_t i = piece.size(); i-- > 0;) id = (id << 8) | static_cast<std::uint8_t>(piece[i]);
      if (body.value("with_pieces", false)) toks.push_back({{"id", id}, {"piece", piece}});
      else toks.push_back(id);
    }
  }
  return ojson{{"tokens", toks}};
}


std::optional<std::pair<int, std::string>> App::embeddings_reply(const json& body, bool oai, std::optional<ErrorReply>& err) {
  const auto texts = inputs_of(body.contains("input") ? body["input"] : body.value("content", json()));
  if (texts.empty()) { err = bad("\"input\" or \"content\" must be provided"); return std::nullopt; }
  const std::string fmt = body.value("encoding_format", "float");
  if (fmt != "float" && fmt != "base64") { err = bad("The format to return the embeddings in. Can be either float or base64"); return std::nullopt; }
  ojson data = ojson::array();
  int n_tokens = 0;
  for (std::size_t i = 0; i < texts.size(); i++) {
    if (texts[i].empty()) { err = bad("Input content cannot be empty"); return std::nullopt; }
    n_tokens += static_cast<int>(tokenize(texts[i]).size());
    const auto v = embed(texts[i], static_cast<int>(model_->info.n_embd));
    if (!oai) { data.push_back({{"index", i}, {"embedding", {v}}}); continue; }
    ojson e = {{"index", i}, {"object", "embedding"}};
    if (fmt == "base64") {
      e["embedding"] = b64(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
      e["encoding_format"] = "base64";
    } else {
      e["embedding"] = v;
    }
    data.push_back(std::move(e));
  }
  if (!oai) return std::pair{200, data.dump()};
  return std::pair{200, ojson{{"model", opt_.model_name()}, {"object", "list"}, {"usage", usage_json(n_tokens)}, {"data", data}}.dump()};
}

std::optional<std::pair<int, std::string>> App::rerank_reply(const json& body, std::optional<ErrorReply>& err) {
  if (!body.contains("query") || !body["query"].is_string()) { err = bad("\"query\" must be provided"); return std::nullopt; }
  const auto docs = inputs_of(body.value("documents", body.value("texts", json::array())));
  if (docs.empty()) { err = bad("\"documents\" must be a non-empty string array"); return std::nullopt; }
  const std::string q = body["query"];
  std::vector<std::pair<double, std::size_t>> scored;
  int n_tokens = 0;
  for (std::size_t i = 0; i < docs.size(); i++) {
    scored.push_back({static_cast<double>(fnv1a(q + "\x1f" + docs[i]) % 10001) / 1000.0 - 5.0, i});
    n_tokens += static_cast<int>(tokenize(q).size() + tokenize(docs[i]).size());
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const auto top_n = static_cast<std::size_t>(std::max(0, body.value("top_n", static_cast<int>(docs.size()))));
  ojson results = ojson::array();
  for (std::size_t i = 0; i < scored.size() && i < top_n; i++)
    results.push_back({{"index", scored[i].second}, {"relevance_score", scored[i].first}});
  return std::pair{200, ojson{{"model", opt_.model_name()}, {"object", "list"}, {"usage", usage_json(n_tokens)},
                              {"results", results}}.dump()};
}

}  // namespace standin
