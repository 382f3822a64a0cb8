#include "pipeline/request.hpp"

#include <cstdio>
#include <set>

#include "pipeline/text.hpp"

namespace kevlaya::pipeline {

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", c);
          out += buf;
        } else {
          out += ch;  // includes UTF-8 continuation bytes
        }
    }
  }
  return out + "\"";
}

Result<std::string> choices_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return make_error(Errc::config_invalid, "choices: the list is empty");
  std::set<std::string> seen;
  std::string out = "root ::= ";
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    if (c.empty()) return make_error(Errc::config_invalid, "choices: choice " + std::to_string(i + 1) + " is empty");
    if (utf8_error(c)) return make_error(Errc::config_invalid, "choices: choice " + std::to_string(i + 1) + " is not valid UTF-8");
    if (!seen.insert(c).second) return make_error(Errc::config_invalid, "choices: '" + c + "' is listed twice");
    out += (i ? " | " : "") + gbnf_literal(c);
  }
  return out;
}

Result<std::vector<ChatMessage>> render_messages(const config::Stage& stage, const TemplateContext& ctx) {
  std::vector<ChatMessage> out;
  for (const auto& m : stage.messages) {
    auto text = render(m.content, ctx);
    if (!text) {
      Error e = text.error();
      e.message = "stage '" + stage.name + "', " + m.role + " message: " + e.message;
      return e;
    }
    out.push_back({m.role, std::move(*text)});
  }
  return out;
}

Result<nlohmann::ordered_json> chat_body(const config::Stage& stage, const std::vector<ChatMessage>& messages,
                                        std::optional<std::int64_t> seed, bool constrain) {
  nlohmann::ordered_json body;
  body["model"] = stage.model;
  body["messages"] = nlohmann::ordered_json::array();
  for (const auto& m : messages) body["messages"].push_back({{"role", m.role}, {"content", m.content}});
  body["temperature"] = stage.sampling.temperature;
  if (stage.sampling.top_p) body["top_p"] = *stage.sampling.top_p;
  if (auto s = seed ? seed : stage.sampling.seed) body["seed"] = *s;
  body["max_tokens"] = stage.sampling.max_tokens;
  body["stream"] = false;
  const auto& out = stage.output;
  if (!out.choices.empty() && !out.json_schema.empty())
    return make_error(Errc::config_invalid, "stage '" + stage.name + "': choices and json_schema are exclusive");
  if (!constrain) return body;
  if (!out.choices.empty()) {
    auto g = choices_grammar(out.choices);
    if (!g) return g.error();
    body["grammar"] = *g;
  } else if (!out.json_schema.empty()) {
    auto schema = nlohmann::ordered_json::parse(out.json_schema, nullptr, false);
    if (schema.is_discarded() || !schema.is_object())
      return make_error(Errc::config_invalid, "stage '" + stage.name + "': json_schema is not a JSON object");
    body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}};
  }
  return body;
}

}  // namespace kevlaya::pipeline
