#include "http/anthropic_wait.hpp"

#include <nlohmann/json.hpp>

#include <utility>

namespace kevlaya::http {

namespace {

using json = nlohmann::json;

// A child's events are small; past this an unframed run is passed through as it came.
constexpr std::size_t kMaxPending = 1 << 20;

std::string sse(const std::string& type, const json& data) {
  return "event: " + type + "\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace

std::string AnthropicWait::thinking(const std::string& text) {
  std::string out;
  if (!opened_) {
    opened_ = true;
    out += sse("message_start", {{"type", "message_start"},
                                 {"message", {{"id", "msg_kevlaya_wait"}, {"type", "message"}, {"role", "assistant"},
                                              {"model", model_}, {"content", json::array()}, {"stop_reason", nullptr},
                                              {"stop_sequence", nullptr},
                                              {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}}}});
    out += sse("content_block_start", {{"type", "content_block_start"}, {"index", 0},
                                       {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
  }
  if (closed_) return out;
  return out + sse("content_block_delta", {{"type", "content_block_delta"}, {"index", 0},
                                           {"delta", {{"type", "thinking_delta"}, {"thinking", text + "\n"}}}});
}

std::string AnthropicWait::feed(std::string_view bytes) {
  if (!opened_) return std::string(bytes);
  std::string out;
  if (!closed_) {
    closed_ = true;
    out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
  }
  pending_.append(bytes);
  for (auto end = pending_.find("\n\n"); end != std::string::npos; end = pending_.find("\n\n")) {
    out += event(pending_.substr(0, end + 2));
    pending_.erase(0, end + 2);
  }
  if (pending_.size() > kMaxPending) out += std::exchange(pending_, {});
  return out;
}

std::string AnthropicWait::event(const std::string& raw) {
  const auto at = raw.find("data: ");
  if (at == std::string::npos) return raw;  // a comment or a bare event line
  const auto eol = raw.find('\n', at);
  auto data = json::parse(raw.substr(at + 6, eol - at - 6), nullptr, false);
  if (!data.is_object()) return raw;
  const std::string type = data.value("type", "");
  if (type == "message_start") return {};  // the client has one already
  if (const auto i = data.find("index"); i != data.end() && i->is_number_unsigned()) *i = i->get<std::uint64_t>() + 1;
  return sse(type, data);
}

}  // namespace kevlaya::http
