#include "support/paths.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kevlaya::test {

std::filesystem::path source_dir() { return KEVLAYA_SOURCE_DIR; }
std::filesystem::path binary_dir() { return KEVLAYA_BINARY_DIR; }
std::filesystem::path orch_binary() { return KEVLAYA_ORCH_PATH; }
std::filesystem::path standin_binary() { return KEVLAYA_STANDIN_PATH; }
std::filesystem::path tiny_gguf_tool() { return KEVLAYA_GGUF_TOOL_PATH; }


TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = binary_dir() / "test-tmp" /
          (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CmdResult run_command(const std::string& cmdline) {
  CmdResult r;
  FILE* p = ::popen((cmdline + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

}  // namespace kevlaya::test
