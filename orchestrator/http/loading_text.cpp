#include "http/loading_text.hpp"

#include <cmath>

namespace kevlaya::http {

// loading_messages: reasoning (docs/http.md, "Loading state in the chat"): what the wait is for,
// from the supervisor's status ("" when the call is about to be served).
std::string wait_text(const supervisor::Snapshot& snap, const std::string& model) {
  for (const auto& p : snap.profiles) {
    if (p.name != model) continue;
    if (p.state == supervisor::Phase::starting) {
      std::string t = "loading " + model;
      if (p.load_progress) {
        const auto& lp = *p.load_progress;
        if (!lp.stage.empty() && lp.stage != "starting") t += ": " + lp.stage;
        if (lp.pct) t += (lp.stage.empty() || lp.stage == "starting" ? ": " : ", ") + std::to_string(static_cast<int>(*lp.pct)) + " %";
        if (lp.eta_s) t += ", about " + std::to_string(static_cast<int>(std::ceil(*lp.eta_s))) + " s left";
      }
      return t;
    }
    if (p.queued > 0) return "waiting for " + model + ": " + std::to_string(p.queued) + " in the queue";
  }
  return {};
}

// The chat-visible form of a wait for a call with loading_messages: reasoning (OpenAI chat:
// reasoning_content; Ollama: thinking), or "" when its API has none (then SSE comments).
std::string wait_event(const ProxyCall& call, const std::string& text) {
  if (text.empty()) return {};
  if (call.wait_map) return call.wait_map(text);
  if (call.shape == ApiShape::openai && call.target.rfind("/v1/chat/completions", 0) == 0)
    return reasoning_event(call.profile(), text);
  return {};
}

}  // namespace kevlaya::http
