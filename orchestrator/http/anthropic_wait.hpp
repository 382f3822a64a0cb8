// loading_messages: reasoning for Anthropic streams (/v1/messages, stream: true): while the call
// waits for a queue slot or a load, the client gets a message_start and a `thinking` content block
// whose deltas say what it waits for; the child's own stream then follows with its message_start
// dropped and every content block index moved up by one, so the answer stays in its own text
// block. Pure: bytes in, bytes out.
#pragma once
#include <string>
#include <string_view>

namespace kevlaya::http {

class AnthropicWait {
 public:
  explicit AnthropicWait(std::string model) : model_(std::move(model)) {}
  // The SSE events that show `text` as thinking (the first call opens the message and the block).
  std::string thinking(const std::string& text);
  // The child's SSE bytes as the client must see them: unchanged when nothing was shown, else
  // re-framed (the thinking block closed first). Holds back a partial event until it is whole.
  std::string feed(std::string_view bytes);

 private:
  std::string event(const std::string& raw);  // one whole upstream event, re-framed
  std::string model_;
  bool opened_ = false;  // message_start and the thinking block were sent
  bool closed_ = false;  // the thinking block was stopped
  std::string pending_;  // upstream bytes of an event not yet whole
};

}  // namespace kevlaya::http
