#include "pipeline/guard.hpp"
#include "common/bounded_json.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "pipeline/schema.hpp"
#include "pipeline/text.hpp"

namespace kevlaya::pipeline {
namespace {

using nlohmann::json;

// A loop is a unit of at most kMaxPeriod bytes repeated at least kMinRepeats times over at
// least kMinLoopBytes at the very end: the signature of a model cut off by max_tokens.
constexpr std::size_t kMaxPeriod = 32;
constexpr std::size_t kMinRepeats = 8;
constexpr std::size_t kMinLoopBytes = 64;

std::optional<std::string> trailing_loop(std::string_view s) {
  for (std::size_t p = 1; p <= kMaxPeriod && 2 * p <= s.size(); ++p) {
    const auto unit = s.substr(s.size() - p);
    std::size_t r = 1;
    while ((r + 1) * p <= s.size() && s.substr(s.size() - (r + 1) * p, p) == unit) ++r;
    if (r >= kMinRepeats && r * p >= kMinLoopBytes)
      return "output ends in a loop: " + quote_for_message(unit) + " repeated " + std::to_string(r) + " times";
  }
  return std::nullopt;
}

GuardResult invalid(std::string why) {
  GuardResult g;
  g.invalid_reason = std::move(why);
  return g;
}

bool equals_icase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

GuardResult parse_json_output(const config::Stage& stage, std::string_view text) {
  auto parsed = parse_json_bounded(text);  // model output: depth-limited, it is re-serialized
  if (!parsed) return invalid(parsed.error().message);
  json value = std::move(parsed.value());
  const auto schema = json::parse(stage.output.json_schema, nullptr, false);
  if (schema.is_discarded()) return invalid("the stage's json_schema is not valid JSON");
  if (auto bad = validate(value, schema)) return invalid("does not match the schema: " + *bad);
  GuardResult g;
  g.valid = true;
  // The output as the model wrote it (its member order is the schema's), one line, valid UTF-8.
  auto ordered = parse_ordered_json_bounded(text);
  g.output = ordered ? dump_json(ordered.value()) : dump_json(value);
  if (value.is_object() && value.contains("reason") && value["reason"].is_string())
    g.reason = value["reason"].get<std::string>();
  g.json = std::move(value);
  return g;
}

// Fills g.verdict / g.feedback for a verify stage; returns false (and sets why) if none found.
bool extract_verdict(const config::Stage& stage, GuardResult& g, std::string& why) {
  std::string said;
  if (g.json) {
    if (!g.json->is_object() || !g.json->contains("verdict") || !(*g.json)["verdict"].is_string()) {
      why = "verify output has no string field 'verdict'";
      return false;
    }
    said = (*g.json)["verdict"].get<std::string>();
  } else if (!stage.output.choices.empty()) {
    said = g.output;
  } else {  // free text: "pass" or "reject: because ..."
    const auto end = g.output.find_first_of(" \t\n:.,;-");
    said = g.output.substr(0, end);
    if (!equals_icase(said, stage.pass_value) && !equals_icase(said, "reject")) {
      why = "verify output starts with neither '" + stage.pass_value + "' nor 'reject'";
      return false;
    }
    if (end != std::string::npos) {
      auto rest = trim_ws(std::string_view(g.output).substr(end));
      while (!rest.empty() && std::string_view(":.,;-").find(rest.front()) != std::string_view::npos)
        rest = trim_ws(rest.substr(1));
      if (!rest.empty()) g.reason = std::string(rest);
    }
    if (equals_icase(said, stage.pass_value)) said = stage.pass_value;
  }
  g.verdict = said == stage.pass_value ? Verdict::pass : Verdict::reject;
  if (g.verdict == Verdict::reject) g.feedback = g.reason ? *g.reason : "the verifier answered '" + said + "'";
  return true;
}

}  // namespace

StageValues GuardResult::values() const {
  StageValues v;
  v.output = output;
  v.reason = reason;
  if (json && json->is_object())
    for (const auto& [k, val] : json->items()) v.fields[k] = val.is_string() ? val.get<std::string>() : val.dump();
  return v;
}

std::optional<std::string> degenerate(std::string_view text) {
  if (auto at = utf8_error(text)) return "invalid UTF-8 at byte " + std::to_string(*at);
  const auto t = trim_ws(text);
  if (t.empty()) return std::string("empty output");
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", c);
      return "control character " + std::string(buf) + " at byte " + std::to_string(i);
    }
  }
  return trailing_loop(t);
}

GuardResult guard(const config::Stage& stage, std::string_view text) {
  if (auto bad = degenerate(text)) return invalid(*bad);
  const auto t = trim_ws(text);
  GuardResult g;
  const auto& choices = stage.output.choices;
  if (!choices.empty()) {
    if (std::find(choices.begin(), choices.end(), t) == choices.end())
      return invalid(quote_for_message(t) + " is not one of the choices");
    g.valid = true;
    g.output = std::string(t);
  } else if (!stage.output.json_schema.empty()) {
    g = parse_json_output(stage, t);
    if (!g.valid) return g;
  } else {
    g.valid = true;
    g.output = std::string(t);
  }
  if (stage.role == config::StageRole::verify) {
    std::string why;
    if (!extract_verdict(stage, g, why)) return invalid(why);
  }
  return g;
}

}  // namespace kevlaya::pipeline
