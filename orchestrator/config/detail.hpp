// Internals shared by the config loaders: one YAML document with its diagnostics sink, typed
// readers that turn bad values into diagnostics, and the per-kind parsers. Not for other modules.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/keys.hpp"

namespace kevlaya::config::detail {

// One YAML file: its text (kept for placeholder locations) and parsed root.
class Doc {
 public:
  Doc(const fs::path& file, std::vector<Diagnostic>& out);
  // Reads the file, validates UTF-8 and parses; false (with a diagnostic) on failure.
  bool load();
  const YAML::Node& root() const { return root_; }
  const fs::path& file() const { return file_; }  // absolute, normalized
  fs::path dir() const { return file_.parent_path(); }
  const std::string& text() const { return text_; }
  SourceLoc loc(const YAML::Node& n) const;   // the node's line:col, or the whole file
  SourceLoc loc_at(std::size_t byte_pos) const;
  void error(const SourceLoc& at, std::string msg);
  void error(const YAML::Node& at, std::string msg) { error(loc(at), std::move(msg)); }
  void warn(const YAML::Node& at, std::string msg);
  // Which key table (config/keys.hpp) the document's keys are read by; set by its parser.
  void set_kind(DocKind k) { kind_ = k; }
  // The table's entry for `path` ("queue.max_depth", "stages[1].role"); throws std::logic_error
  // when the table lacks it (a reader without a table entry is a bug, not a user error).
  const Key& key(std::string_view path) const;

 private:
  bool check_utf8();
  void report_parse_error(int line0, int col0, const std::string& msg);
  fs::path file_;
  std::vector<Diagnostic>& out_;
  std::string text_;
  YAML::Node root_;
  DocKind kind_ = DocKind::orchestrator;
};

// How a node reads in messages: `string "lots"`, `number 2.5`, `a list`, `nothing`.
std::string describe(const YAML::Node& n);

// Typed readers: return nullopt after recording a diagnostic at the node. Strings are env-expanded.
// Ranges and allowed words are the key table's entry for `key` (config/keys.cpp).
std::optional<std::string> read_string(Doc& d, const std::string& key, const YAML::Node& n);
std::optional<std::int64_t> read_int(Doc& d, const std::string& key, const YAML::Node& n);
// An integer in an explicit range, for readers that report their own range message (ngl).
std::optional<std::int64_t> read_int(Doc& d, const std::string& key, const YAML::Node& n,
                                     std::int64_t lo, std::int64_t hi);
std::optional<double> read_number(Doc& d, const std::string& key, const YAML::Node& n);
std::optional<bool> read_bool(Doc& d, const std::string& key, const YAML::Node& n);
std::optional<std::string> read_enum(Doc& d, const std::string& key, const YAML::Node& n);
// A list of strings; a single scalar is accepted as a one-element list when `scalar_ok`.
std::optional<std::vector<std::string>> read_string_list(Doc& d, const std::string& key,
                                                         const YAML::Node& n, bool scalar_ok);
std::optional<std::map<std::string, std::string>> read_string_map(Doc& d, const std::string& key,
                                                                  const YAML::Node& n);
// A path relative to the document's folder, made absolute ("~/" = $HOME).
std::optional<fs::path> read_path(Doc& d, const std::string& key, const YAML::Node& n);

// Assign-if-valid shorthands for struct fields.
void set_int(Doc& d, const std::string& key, const YAML::Node& n, int& dst);
void set_int64(Doc& d, const std::string& key, const YAML::Node& n, std::int64_t& dst);
void set_string(Doc& d, const std::string& key, const YAML::Node& n, std::string& dst);
void set_bool(Doc& d, const std::string& key, const YAML::Node& n, bool& dst);

// The front door's security keys (config/door.cpp, docs/security.md).
void read_allowed_hosts(Doc& d, const YAML::Node& n, std::vector<std::string>& out);
void read_cors(Doc& d, const YAML::Node& n, CorsCfg& c);
void read_tools(Doc& d, const YAML::Node& n, ToolsCfg& t);
void read_runs(Doc& d, const YAML::Node& n, RunsCfg& r);
// `key`: the YAML key read ("api_keys_file", "admin_api_keys_env", ...), for its messages.
void read_api_keys_file(Doc& d, const char* key, const YAML::Node& n, std::vector<std::string>& keys);  // one per line
void read_api_keys_env(Doc& d, const char* key, const YAML::Node& n, std::vector<std::string>& keys);   // comma-separated

// One known key of a mapping and what to do with its value.
struct Field {
  std::string name;
  std::function<void(const YAML::Node& value)> read;
};
// Visits a mapping: reports a non-mapping, duplicate keys and unknown keys (with a suggestion),
// and calls each known field's reader. `what` names the mapping in messages ("profile", "health")
// and is its path in the key table: the known keys are the table's, and `fields` must read exactly
// those (std::logic_error otherwise).
bool walk_map(Doc& d, const std::string& what, const YAML::Node& map,
              const std::vector<Field>& fields);

// Closest candidate by edit distance, if close enough to be a plausible typo.
std::optional<std::string> suggest(std::string_view word, const std::vector<std::string>& candidates);
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Where extra facts about a profile were written, for cross-document checks.
struct ProfileLocs {
  SourceLoc name;
  std::vector<SourceLoc> alias;  // parallel to Profile::alias
  SourceLoc port;
  SourceLoc gpu;
};
struct StageLocs {
  SourceLoc model;
};
struct PipelineLocs {
  SourceLoc name;
  std::vector<StageLocs> stages;
};

// Per-kind parsers over a loaded document; append to `out` only when the document is usable.
// Nodes of the backend keys a profile set (for the checks that need the whole document).
struct BackendNodes {
  std::optional<YAML::Node> model, binary, url, api_key, command, vram_mib, stop_command, ready_line;
};
// profile_backend.cpp: backend keys and their cross-checks.
void read_stop(Doc& d, const YAML::Node& n, StopCfg& s, BackendNodes& nodes);
void read_command(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes);
void read_vram(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes);
void read_api_key_file(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes);
// api_key_file (profiles, peers): the file's first non-empty line, trimmed ("" after its error), or
// nullopt after an error. `warn_shared`: warn when other users may read the file.
std::optional<std::string> read_key_file(Doc& d, const YAML::Node& n, bool warn_shared);
void check_backend(Doc& d, Profile& p, const YAML::Node& at, const BackendNodes& nodes);
void read_peers(Doc& d, const YAML::Node& n, std::vector<PeerCfg>& out);  // peers.cpp

void parse_profile(Doc& d, std::vector<Profile>& out, std::vector<ProfileLocs>& locs);
void parse_pipeline(Doc& d, std::vector<Pipeline>& out, std::vector<PipelineLocs>& locs);

}  // namespace kevlaya::config::detail
