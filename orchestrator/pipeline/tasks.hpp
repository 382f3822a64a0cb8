// Batch task input: JSONL, one object per line (pure parsing; never throws on bad input).
//   {"id": "t1", "input": "...", "candidates": ["a", "b"], "city": "Paris"}
// `id` (string or integer) and `input` (string) are required; `candidates` is an optional list
// of strings; every other key becomes a template var ({{vars.city}}): strings as they are,
// other values as compact JSON.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::pipeline {

struct Task {
  std::string id;
  std::string input;
  std::optional<std::vector<std::string>> candidates;
  std::map<std::string, std::string> vars;
  int line = 0;  // 1-based line in the input file
};

struct TaskIssue {
  int line = 0;
  std::string message;
  std::string format(const std::string& file) const;  // "file:line: message"
};

struct TaskList {
  std::vector<Task> tasks;       // good lines, in file order
  std::vector<TaskIssue> issues; // bad lines (skipped), blank lines are not issues
};

// Parses JSONL text. Bad lines (not JSON, not an object, missing/ill-typed fields, duplicate
// id) become issues and are skipped.
TaskList parse_tasks(std::string_view text);

// Reads and parses `file`. In strict mode any issue fails the whole load (Errc::bad_request,
// every issue in Error::detail); otherwise issues are returned for the caller to report.
Result<TaskList> load_tasks(const std::filesystem::path& file, bool strict);

}  // namespace kevlaya::pipeline
