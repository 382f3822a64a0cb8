// Small shared pieces of the config model: diagnostics, lookups, ${VAR} expansion, display paths.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "config/config.hpp"

namespace kevlaya::config {

std::string Diagnostic::format() const {
  std::string out = loc.file;
  if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  out += severity == Severity::error ? ": error: " : ": warning: ";
  return out + message;
}

bool LoadResult::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.severity == Severity::error; });
}

std::size_t LoadResult::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::error; }));
}

const Profile* Config::find_profile(const std::string& name_or_alias) const {
  for (const auto& p : profiles)
    if (p.name == name_or_alias) return &p;
  for (const auto& p : profiles)
    if (std::find(p.alias.begin(), p.alias.end(), name_or_alias) != p.alias.end()) return &p;
  return nullptr;
}

int Config::idle_unload_s(const Profile& p) const {
  if (p.pin) return 0;
  return p.idle_unload_s.value_or(orch.idle_unload_s);
}

std::string evict_text(const EvictCfg& e) {
  if (!e.protect) return "normal";
  return "protect (idle " + std::to_string(e.idle_s) + " s, max wait " + std::to_string(e.max_wait_s) + " s)";
}

LoadingMessages Config::loading_messages(const Profile& p) const {
  return p.loading_messages.value_or(orch.loading_messages);
}

const Pipeline* Config::find_pipeline(const std::string& name) const {
  for (const auto& p : pipelines)
    if (p.name == name) return &p;
  return nullptr;
}

std::string display_path(const fs::path& p) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec || p.is_relative()) return p.string();
  const fs::path rel = p.lexically_normal().lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return p.lexically_normal().string();
  return rel.string();
}

namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string expand_env(const std::string& in, std::string* err) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in.compare(i, 3, "$${") == 0) {  // escape: $${X} is the literal text ${X}
      out += "${";
      i += 2;
      continue;
    }
    if (in.compare(i, 2, "${") != 0) {
      out += in[i];
      continue;
    }
    const std::size_t close = in.find('}', i + 2);
    const std::string body = close == std::string::npos ? "" : in.substr(i + 2, close - i - 2);
    std::size_t n = 0;
    while (n < body.size() && (n == 0 ? is_name_start(body[n]) : is_name_char(body[n]))) ++n;
    const bool has_default = body.compare(n, 2, ":-") == 0;
    if (close == std::string::npos || n == 0 || (n != body.size() && !has_default)) {
      if (err) *err = "invalid variable reference '" + in.substr(i, close == std::string::npos
                                                                     ? std::string::npos
                                                                     : close - i + 1) +
                      "' (write ${NAME} or ${NAME:-default})";
      return in;
    }
    const std::string name = body.substr(0, n);
    const char* v = std::getenv(name.c_str());
    if (v && *v) {
      out += v;
    } else if (has_default) {
      out += body.substr(n + 2);
    } else {
      if (err) *err = "environment variable '" + name + "' is not set (write ${" + name +
                      ":-default} to give a default)";
      return in;
    }
    i = close;
  }
  return out;
}

const char* to_string(Residency r) {
  switch (r) {
    case Residency::auto_: return "auto";
    case Residency::rotate: return "rotate";
    case Residency::co_resident: return "co-resident";
  }
  return "?";
}

const char* to_string(StageRole r) {
  switch (r) {
    case StageRole::decide: return "decide";
    case StageRole::verify: return "verify";
    case StageRole::other: return "other";
  }
  return "?";
}

}  // namespace kevlaya::config
