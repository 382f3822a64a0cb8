// Paths the build passes to tests, and small helpers shared by test files.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kevlaya::test {

// The build's folders and products (defined in paths.cpp only, so that no other test file
// embeds a clone's absolute paths and a compiler cache can serve it to any clone).
std::filesystem::path source_dir();
std::filesystem::path binary_dir();
// llama2.c's stories260K, an optional extra: $KEVLAYA_STORIES260K (a path), else empty (tests skip).
inline std::filesystem::path stories260k() {
  const char* v = std::getenv("KEVLAYA_STORIES260K");
  return v ? std::filesystem::path(v) : std::filesystem::path();
}
std::filesystem::path orch_binary();
std::filesystem::path standin_binary();
std::filesystem::path tiny_gguf_tool();

// Path of the real llama-server from $KEVLAYA_LLAMA_SERVER, or empty (tests then skip).
inline std::string real_llama_server() {
  const char* v = std::getenv("KEVLAYA_LLAMA_SERVER");
  return v ? std::string(v) : std::string();
}

// A fresh, empty directory under the build tree, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path` (creating parent folders).
void write_text(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

// Runs a command line through /bin/sh, captures stdout+stderr, returns the exit status.
struct CmdResult {
  int exit_code = -1;
  std::string output;
};
CmdResult run_command(const std::string& cmdline);

}  // namespace kevlaya::test

// Skips the current test (reported as skipped by CTest via exit code 4) with a reason.
#define KEVLAYA_SKIP(reason)                                   \
  do {                                                         \
    WARN("SKIPPED: " << reason);                               \
    ::kevlaya::test::mark_skipped();                           \
    return;                                                    \
  } while (0)

namespace kevlaya::test {
void mark_skipped();
}

// Declares `name`, the real llama-server's path ($KEVLAYA_LLAMA_SERVER), or skips the test.
#define KEVLAYA_REAL_SERVER_OR_SKIP(name)                   \
  const std::string name = ::kevlaya::test::real_llama_server(); \
  if (name.empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set")
