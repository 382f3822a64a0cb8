// What a call that waits for a queue slot or a load is told, with loading_messages: reasoning
// (docs/http.md, "Loading state in the chat"). Pure: the supervisor's status in, text out.
#pragma once
#include <string>

#include "http/detail.hpp"

namespace kevlaya::http {

// What the wait is for, from the supervisor's status ("" when the call is about to be served).
std::string wait_text(const supervisor::Snapshot& snap, const std::string& model);

// The chat-visible form of `text` for `call` (OpenAI chat: reasoning_content; Ollama: thinking),
// or "" when its API has none (then SSE comments).
std::string wait_event(const ProxyCall& call, const std::string& text);

}  // namespace kevlaya::http
