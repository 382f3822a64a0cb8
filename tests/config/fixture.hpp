// Helpers for config tests: write YAML into a temp dir and look for exact diagnostics.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "support/paths.hpp"

namespace kevlaya::test {

namespace cfg = kevlaya::config;

// "file:line:col: error: message" as the loader prints it for `file`.
inline std::string diag(const std::filesystem::path& file, int line, int col, const std::string& msg,
                        const char* sev = "error") {
  return cfg::display_path(std::filesystem::absolute(file).lexically_normal()) + ":" +
         std::to_string(line) + ":" + std::to_string(col) + ": " + sev + ": " + msg;
}

inline std::vector<std::string> formatted(const cfg::LoadResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) out.push_back(d.format());
  return out;
}

// Only the errors, formatted (warnings left out).
inline std::vector<std::string> errors(const cfg::LoadResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics)
    if (d.severity == cfg::Severity::error) out.push_back(d.format());
  return out;
}

inline bool has_diag(const cfg::LoadResult& r, const std::string& expected) {
  const auto all = formatted(r);
  return std::find(all.begin(), all.end(), expected) != all.end();
}

inline std::string dump(const cfg::LoadResult& r) {
  std::string s;
  for (const auto& d : formatted(r)) s += d + "\n";
  return s;
}

// A profile file in `dir` with a dummy model file next to it (any bytes do for loading).
inline std::filesystem::path write_profile(const TempDir& dir, const std::string& file,
                                           const std::string& body) {
  write_text(dir / "m.gguf", "GGUF dummy");
  const auto p = dir / file;
  write_text(p, body);
  return p;
}

// A minimal tree in `d` (one profile, kev, on a dummy model) plus kevlaya.yaml holding `orch`;
// returns kevlaya.yaml's path.
inline std::filesystem::path minimal_tree(const TempDir& d, const std::string& orch) {
  write_text(d / "m.gguf", "x");
  write_text(d / "profiles/kev.yaml", "name: kev\nmodel: ../m.gguf\n");
  write_text(d / "kevlaya.yaml", orch);
  return d / "kevlaya.yaml";
}

}  // namespace kevlaya::test
