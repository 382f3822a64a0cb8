// Ollama's API translated onto a child's OpenAI endpoints (docs/http.md): pure functions from an
// Ollama request body to the OpenAI body, and from the child's answer (whole, or SSE as it
// streams) to Ollama's JSON / NDJSON. No I/O; the routes are in ollama.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya::http {

enum class OllamaKind { chat, generate, embed, embeddings };

// The child path a kind is forwarded to (/v1/chat/completions, /v1/completions for raw generate,
// /v1/embeddings).
std::string ollama_target(OllamaKind kind, const nlohmann::json& body);

// Ollama body -> OpenAI body for the child; `model` is the resolved profile, `ctx` its context.
// Errors (400): bad format/options/keep_alive, options.num_ctx above `ctx`.
Result<nlohmann::json> ollama_to_openai(OllamaKind kind, const nlohmann::json& body, const std::string& model,
                                        int ctx);

// Whether the Ollama request streams (Ollama's default is true, except for embeddings).
bool ollama_streams(OllamaKind kind, const nlohmann::json& body);

// A whole OpenAI answer -> Ollama's answer (`model` as the client named it).
std::string ollama_answer(OllamaKind kind, const std::string& openai_body, const std::string& model);

// The child's SSE, fed as it arrives -> Ollama NDJSON lines (one per delta, a final done:true).
class OllamaStream {
 public:
  OllamaStream(OllamaKind kind, std::string model) : kind_(kind), model_(std::move(model)) {}
  std::string feed(std::string_view sse);  // complete NDJSON lines produced so far ("" = none)

 private:
  std::string event(const nlohmann::json& j);
  std::string final_line();
  OllamaKind kind_;
  std::string model_;
  std::string buf_;
  std::string done_reason_ = "stop";
  nlohmann::json usage_, timings_;
  bool done_ = false;
};

// RFC 3339 UTC time ("2026-01-02T03:04:05Z") of a Unix time in seconds.
std::string rfc3339(std::int64_t unix_s);

}  // namespace kevlaya::http
