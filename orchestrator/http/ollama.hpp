// Ollama's API translated onto a child's OpenAI endpoints (docs/http.md): pure functions from an
// Ollama request body to the OpenAI body, and from the child's answer (whole, or SSE as it
// streams) to Ollama's JSON / NDJSON. No I/O; the routes are in ollama.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
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

// The child's request text for `mapped` (ollama_to_openai's result): the caller's `format` schema and
// `tools` as written in `raw_body`, members in their order (llama-server's grammar writes a schema's
// properties in the order they are listed), everything else as mapped.
std::string ollama_request_text(const nlohmann::json& mapped, std::string_view raw_body);

// Whether the Ollama request streams (Ollama's default is true, except for embeddings).
bool ollama_streams(OllamaKind kind, const nlohmann::json& body);

// What the door saw of a call, for Ollama's durations: when it arrived and how long bringing its
// model up took (the lease's switch_ms; 0 when it was resident). Filled once the lease is held.
struct CallTimes {
  std::chrono::steady_clock::time_point arrived{};
  std::int64_t load_ms = 0;
};

// A whole OpenAI answer -> Ollama's answer (`model` as the client named it). Durations (ns):
// load_duration from `times`, prompt_eval/eval from the child's `timings`, total_duration from
// the call's arrival to now (queue, load, prompt and generation); without `times`, load 0 and
// total = prompt + eval.
std::string ollama_answer(OllamaKind kind, const std::string& openai_body, const std::string& model,
                          const CallTimes* times = nullptr);

// The child's SSE, fed as it arrives -> Ollama NDJSON lines (one per delta, a final done:true
// whose durations are ollama_answer's).
class OllamaStream {
 public:
  OllamaStream(OllamaKind kind, std::string model, std::shared_ptr<const CallTimes> times = nullptr)
      : kind_(kind), model_(std::move(model)), times_(std::move(times)) {}
  // Complete NDJSON lines produced so far ("" = none). An SSE event larger than kMaxEventBytes is
  // not buffered: the stream ends with an error line instead.
  std::string feed(std::string_view sse);
  static constexpr std::size_t kMaxEventBytes = 8 << 20;
  // A wait's progress as a line whose `thinking` field carries `text` (the answer stays empty).
  std::string thinking_line(const std::string& text) const;

 private:
  std::string event(const nlohmann::json& j);
  std::string final_line();
  OllamaKind kind_;
  std::string model_;
  std::string buf_;
  std::string done_reason_ = "stop";
  std::shared_ptr<const CallTimes> times_;
  nlohmann::json usage_, timings_;
  nlohmann::json calls_ = nlohmann::json::array();  // streamed tool-call deltas, joined per index
  bool done_ = false;
};

// RFC 3339 UTC time ("2026-01-02T03:04:05Z") of a Unix time in seconds.
std::string rfc3339(std::int64_t unix_s);

}  // namespace kevlaya::http
