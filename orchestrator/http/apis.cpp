#include "http/apis.hpp"

#include <array>
#include <chrono>

#include "common/bounded_json.hpp"
#include "common/bytes.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;
constexpr auto kOpenAI = ApiShape::openai, kResp = ApiShape::responses, kAnth = ApiShape::anthropic;
constexpr auto kBody = ModelFrom::body, kQuery = ModelFrom::query;

// Every model route of llama-server's tools/server/server.cpp the door forwards (docs/http.md).
// Not here: /health, /metrics, /v1/models (the door's own), /lora-adapters (the door manages
// adapters), /slots/{id} actions and /cors-proxy (child_routes.cpp: checked, then forwarded),
// /models and /models/* (the router API: the door's own, router.cpp and router_api.cpp),
// /v1/audio/transcriptions (multipart bodies: the door takes JSON only).
constexpr std::array<ApiRoute, 27> kRoutes = {{
    {"/v1/chat/completions", true, kOpenAI, kBody},
    {"/chat/completions", true, kOpenAI, kBody},
    {"/v1/completions", true, kOpenAI, kBody},
    {"/completions", true, kOpenAI, kBody},
    {"/completion", true, kOpenAI, kBody},
    {"/v1/chat/completions/input_tokens", true, kOpenAI, kBody},
    {"/chat/completions/input_tokens", true, kOpenAI, kBody},
    {"/v1/responses", true, kResp, kBody},
    {"/responses", true, kResp, kBody},
    {"/v1/responses/input_tokens", true, kResp, kBody},
    {"/responses/input_tokens", true, kResp, kBody},
    {"/v1/messages", true, kAnth, kBody},
    {"/v1/messages/count_tokens", true, kAnth, kBody},
    {"/v1/embeddings", true, kOpenAI, kBody},
    {"/embeddings", true, kOpenAI, kBody},
    {"/embedding", true, kOpenAI, kBody},
    {"/v1/rerank", true, kOpenAI, kBody},
    {"/v1/reranking", true, kOpenAI, kBody},
    {"/rerank", true, kOpenAI, kBody},
    {"/reranking", true, kOpenAI, kBody},
    {"/tokenize", true, kOpenAI, kBody},
    {"/detokenize", true, kOpenAI, kBody},
    {"/apply-template", true, kOpenAI, kBody},
    {"/infill", true, kOpenAI, kBody},
    {"/predict", true, kOpenAI, kBody},  // Vertex AI's predict (a child in that mode: docs/http.md)
    {"/props", false, kOpenAI, kQuery},
    {"/slots", false, kOpenAI, kQuery},
}};

// Anthropic's error types by status (docs.anthropic.com/en/api/errors).
std::string_view anthropic_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: break;
  }
  return status < 500 ? "invalid_request_error" : "api_error";
}

std::string message_of(const json& body) {
  if (auto said = error_message(body)) return *said;
  return body.is_discarded() ? "error" : dump_json(body);
}

json anthropic_error(int status, const json& openai_body) {
  json err = {{"type", anthropic_type(status)}, {"message", message_of(openai_body)}};
  // Kevlaya's own fields (code, hint, src, retry_after_s) are kept: clients ignore extra keys.
  if (openai_body.is_object() && openai_body.contains("error") && openai_body["error"].is_object())
    for (const auto& [k, v] : openai_body["error"].items())
      if (k != "type" && k != "message") err[k] = v;
  return {{"type", "error"}, {"error", std::move(err)}};
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string url_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

const ApiRoute* find_api_route(std::string_view path) {
  for (const auto& r : kRoutes)
    if (r.path == path) return &r;
  return nullptr;
}

ApiShape shape_of_path(std::string_view path) {
  if (const auto* r = find_api_route(path)) return r->shape;
  if (path.substr(0, 5) == "/api/") return ApiShape::ollama;
  return ApiShape::openai;
}

Reply reshape_error(Reply r, ApiShape shape) {
  if (shape == ApiShape::openai || shape == ApiShape::responses) return r;
  const json body = json::parse(r.body, nullptr, false);  // our own serialization: bounded
  if (shape == ApiShape::anthropic) r.body = dump_json(anthropic_error(r.status, body));
  else r.body = dump_json(json{{"error", message_of(body)}});
  r.content_type = "application/json";
  return r;
}

std::string error_event(ApiShape shape, int status, const json& body) {
  switch (shape) {
    case ApiShape::openai: return "data: " + dump_json(body) + "\n\n";
    case ApiShape::responses: {
      json e = {{"type", "error"}, {"message", message_of(body)}, {"param", nullptr}, {"code", nullptr}};
      if (body.is_object() && body.contains("error") && body["error"].is_object() &&
          body["error"].contains("code"))
        e["code"] = body["error"]["code"].is_string() ? body["error"]["code"] : json(dump_json(body["error"]["code"]));
      return "event: error\ndata: " + dump_json(e) + "\n\n";
    }
    case ApiShape::anthropic:
      return "event: error\ndata: " + dump_json(anthropic_error(status, body)) + "\n\n";
    case ApiShape::ollama: return dump_json(json{{"error", message_of(body)}}) + "\n";
  }
  return {};
}

std::string keepalive_event(ApiShape shape, const std::string& model) {
  if (shape == ApiShape::anthropic) return "event: ping\ndata: {\"type\": \"ping\"}\n\n";
  if (shape == ApiShape::ollama) return {};
  return ": loading " + model + " \xE2\x80\xA6\n\n";  // "…"
}

std::string reasoning_event(const std::string& model, const std::string& text) {
  const nlohmann::json chunk = {
      {"id", "kevlaya-wait"}, {"object", "chat.completion.chunk"},
      {"created", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()},
      {"model", model},
      {"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"reasoning_content", text + "\n"}}}, {"finish_reason", nullptr}}}}};
  return "data: " + chunk.dump() + "\n\n";
}

std::string_view query_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

std::string query_param(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == key) return eq == std::string_view::npos ? "" : url_decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace kevlaya::http
