#include "pipeline/tasks.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/bounded_file.hpp"
#include "common/bounded_json.hpp"

namespace kevlaya::pipeline {
namespace {

using nlohmann::json;

std::optional<std::string> id_of(const json& v) {
  if (v.is_string() && !v.get_ref<const std::string&>().empty()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  return std::nullopt;
}

// One line -> a task, or the reason it is not one.
Result<Task> parse_line(std::string_view line, int line_no) {
  auto bad = [](std::string msg) { return make_error(Errc::bad_request, std::move(msg)); };
  auto parsed = parse_json_bounded(line);  // depth-limited: fields are re-serialized below
  if (!parsed) return bad(parsed.error().message);
  json obj = std::move(parsed.value());
  if (!obj.is_object()) return bad("expected a JSON object");
  Task t;
  t.line = line_no;
  auto id = obj.contains("id") ? id_of(obj["id"]) : std::nullopt;
  if (!id) return bad("'id' must be a non-empty string or an integer");
  t.id = *id;
  if (!obj.contains("input") || !obj["input"].is_string()) return bad("'input' must be a string");
  t.input = obj["input"].get<std::string>();
  for (const auto& [key, val] : obj.items()) {
    if (key == "id" || key == "input") continue;
    if (key == "candidates") {
      if (!val.is_array()) return bad("'candidates' must be a list of strings");
      std::vector<std::string> c;
      for (const auto& x : val) {
        if (!x.is_string()) return bad("'candidates' must be a list of strings");
        c.push_back(x.get<std::string>());
      }
      t.candidates = std::move(c);
      continue;
    }
    t.vars[key] = val.is_string() ? val.get<std::string>() : val.dump();
  }
  return t;
}

}  // namespace

std::string TaskIssue::format(const std::string& file) const {
  return file + ":" + std::to_string(line) + ": " + message;
}

TaskList parse_tasks(std::string_view text) {
  TaskList out;
  std::set<std::string> ids;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    auto line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto task = parse_line(line, line_no);
    if (!task) {
      out.issues.push_back({line_no, task.error().message});
    } else if (!ids.insert(task->id).second) {
      out.issues.push_back({line_no, "duplicate id '" + task->id + "' (line skipped)"});
    } else {
      out.tasks.push_back(std::move(*task));
    }
  }
  return out;
}

Result<TaskList> load_tasks(const std::filesystem::path& file, bool strict) {
  const auto text = read_bounded_file(file, kMaxTaskFileBytes, "a task file");
  if (!text) return make_error(Errc::io_error, "cannot read task file " + file.string() + ": " + text.error().message);
  auto list = parse_tasks(text.value());
  if (strict && !list.issues.empty()) {
    Error e = make_error(Errc::bad_request,
                         file.string() + ": " + std::to_string(list.issues.size()) + " bad task line(s)",
                         "fix the lines, or run without --strict to skip them");
    for (const auto& i : list.issues) e.detail.push_back(i.format(file.string()));
    return e;
  }
  return list;
}

}  // namespace kevlaya::pipeline
