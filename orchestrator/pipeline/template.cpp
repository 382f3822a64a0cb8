#include "pipeline/template.hpp"

#include <nlohmann/json.hpp>

#include "common/bytes.hpp"
#include "common/strings.hpp"

namespace kevlaya::pipeline {
namespace {

constexpr std::string_view kOpen = "{{";
constexpr std::string_view kClose = "}}";

Error missing(std::string_view name, std::string_view why) {
  return make_error(Errc::bad_request,
                    "template placeholder {{" + std::string(name) + "}}: " + std::string(why));
}

Result<std::string> candidates_value(std::string_view form, const TemplateContext& ctx,
                                     std::string_view name) {
  if (!ctx.candidates) return missing(name, "this task has no candidates");
  const auto& c = *ctx.candidates;
  std::string out;
  if (form.empty()) {
    for (std::size_t i = 0; i < c.size(); ++i) out += (i ? ", " : "") + c[i];
  } else if (form == "bullets") {
    for (std::size_t i = 0; i < c.size(); ++i) out += (i ? "\n- " : "- ") + c[i];
  } else if (form == "json") {
    out = dump_json(nlohmann::json(c));  // --candidates may hold any bytes
  } else {
    return missing(name, "unknown candidates form (use candidates, candidates.bullets or candidates.json)");
  }
  return out;
}

Result<std::string> stage_value(std::string_view stage, std::string_view field,
                                const TemplateContext& ctx, std::string_view name) {
  if (field == "feedback") {  // empty until that verify stage has rejected once
    auto it = ctx.feedback_by_stage.find(std::string(stage));
    return it == ctx.feedback_by_stage.end() ? std::string() : it->second;
  }
  auto it = ctx.stages.find(std::string(stage));
  if (it == ctx.stages.end()) return missing(name, "stage '" + std::string(stage) + "' has not run yet");
  const StageValues& v = it->second;
  if (field == "output") return v.output;
  if (field == "reason") {
    if (!v.reason) return missing(name, "stage '" + std::string(stage) + "' gave no reason");
    return *v.reason;
  }
  auto f = v.fields.find(std::string(field));
  if (f == v.fields.end())
    return missing(name, "stage '" + std::string(stage) + "' output has no field '" + std::string(field) + "'");
  return f->second;
}

Result<std::string> value_of(std::string_view name, const TemplateContext& ctx) {
  if (name == "input") return ctx.input;
  if (name == "feedback") return ctx.feedback;
  if (name == "candidates") return candidates_value("", ctx, name);
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return missing(name, "unknown placeholder");
  const auto head = name.substr(0, dot);
  const auto tail = name.substr(dot + 1);
  if (tail.empty()) return missing(name, "empty field name");
  if (head == "candidates") return candidates_value(tail, ctx, name);
  if (head == "vars") {
    auto it = ctx.vars.find(std::string(tail));
    if (it == ctx.vars.end()) return missing(name, "the task has no field '" + std::string(tail) + "'");
    return it->second;
  }
  return stage_value(head, tail, ctx, name);
}

// Calls on_text / on_name for each piece of `tmpl`; stops at the first error.
template <class OnText, class OnName>
Status scan(std::string_view tmpl, OnText on_text, OnName on_name) {
  std::size_t pos = 0;
  while (pos < tmpl.size()) {
    const auto open = tmpl.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    on_text(tmpl.substr(pos, open - pos));
    const auto close = tmpl.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos)
      return make_error(Errc::bad_request, "template: '{{' at offset " + std::to_string(open) + " is never closed");
    const auto name = trim_blanks(tmpl.substr(open + kOpen.size(), close - open - kOpen.size()));
    if (name.empty())
      return make_error(Errc::bad_request, "template: empty placeholder at offset " + std::to_string(open));
    if (auto st = on_name(name); !st) return st;
    pos = close + kClose.size();
  }
  on_text(tmpl.substr(std::min(pos, tmpl.size())));
  return ok_status();
}

}  // namespace

Result<std::string> render(std::string_view tmpl, const TemplateContext& ctx) {
  std::string out;
  out.reserve(tmpl.size());
  auto st = scan(
      tmpl, [&](std::string_view text) { out += text; },
      [&](std::string_view name) -> Status {
        auto v = value_of(name, ctx);
        if (!v) return v.error();
        out += *v;
        return ok_status();
      });
  if (!st) return st.error();
  return out;
}

Result<std::vector<std::string>> placeholders(std::string_view tmpl) {
  std::vector<std::string> names;
  auto st = scan(
      tmpl, [](std::string_view) {},
      [&](std::string_view name) -> Status {
        names.emplace_back(name);
        return ok_status();
      });
  if (!st) return st.error();
  return names;
}

}  // namespace kevlaya::pipeline
