// The run journal: one JSON object per finished task, one line each, appended and fsync'ed so a
// crash loses at most the task in flight. `--resume` reads it back and skips completed tasks.
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/fd.hpp"

namespace kevlaya::pipeline {

class Journal {
 public:
  enum class Mode {
    create,  // a new journal; an existing non-empty file is an error (use resume)
    resume,  // read existing records (a missing file is an empty journal), then append
  };

  // Opens (and with resume reads) the journal. A torn last line — a crash mid-write — is
  // dropped and truncated away; a corrupt line before the last, or any line of valid JSON that is
  // not a record (an object with a string "id"), is an error naming file and line (Errc::io_error).
  static Result<Journal> open(const std::filesystem::path& path, Mode mode);

  // Appends `record` as one line and fsyncs. On failure the file is cut back to its old size.
  Status append(const nlohmann::json& record);

  const std::vector<nlohmann::json>& existing() const { return existing_; }  // read at open
  // Ids of tasks whose last record has verdict accepted or rejected (errors are retried).
  const std::set<std::string>& completed() const { return completed_; }
  bool dropped_torn_line() const { return dropped_torn_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  Journal() = default;
  void note(const nlohmann::json& record);

  UniqueFd fd_;  // moved with the journal, closed with it
  std::filesystem::path path_;
  std::vector<nlohmann::json> existing_;
  std::set<std::string> completed_;
  bool dropped_torn_ = false;
};

}  // namespace kevlaya::pipeline
