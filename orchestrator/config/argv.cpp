// Profile -> child argv. Pure: the same profile, host and port always give the same vector, in a
// fixed order, so it can be golden-tested and shown by `kevlaya-orch args`.
#include <algorithm>
#include <sstream>

#include "config/config.hpp"

namespace kevlaya::config {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// True when the profile's own extra args already choose llama-server's log verbosity.
bool sets_verbosity(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    for (const char* f : {"-lv", "--verbosity", "--log-verbosity", "-v", "--verbose", "--log-verbose", "--log-disable"}) {
      if (a == f || a.rfind(std::string(f) + "=", 0) == 0) return true;
    }
    return false;
  });
}

std::string ngl_text(int ngl) { return ngl < 0 ? "all" : std::to_string(ngl); }  // b10470 takes "all"

// backend=command: fills {model},{port},{host},{ctx},{ngl},{alias} inside each template word.
std::vector<std::string> from_template(const Profile& p, const std::string& host,
                                       const std::string& port) {
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"{model}", p.model.string()}, {"{port}", port},
      {"{host}", host},              {"{ctx}", std::to_string(p.ctx)},
      {"{ngl}", ngl_text(p.ngl)},    {"{alias}", p.name}};
  std::vector<std::string> argv;
  for (std::string word : p.command) {
    for (const auto& [key, value] : vars) {
      for (std::size_t at = word.find(key); at != std::string::npos;
           at = word.find(key, at + value.size()))
        word.replace(at, key.size(), value);
    }
    argv.push_back(std::move(word));
  }
  return argv;
}

}  // namespace

std::vector<std::string> build_argv_text(const Profile& p, const std::string& host,
                                         const std::string& port_text) {
  if (p.backend == Backend::remote) return {};
  if (p.backend == Backend::command) return from_template(p, host, port_text);
  // Only the profile name goes to --alias: llama-server reports the first alias (std::set order)
  // as its model name; extra aliases are routed by the orchestrator, not by the child.
  std::vector<std::string> a = {p.binary, "-m",   p.model.string(), "-ngl",   ngl_text(p.ngl),
                                "-c",     std::to_string(p.ctx),    "-np",    std::to_string(p.parallel),
                                "--host", host,   "--port",         port_text, "--alias", p.name};
  if (p.batch > 0) a.insert(a.end(), {"-b", std::to_string(p.batch)});
  if (!p.cache_type_k.empty()) a.insert(a.end(), {"-ctk", p.cache_type_k});
  if (!p.cache_type_v.empty()) a.insert(a.end(), {"-ctv", p.cache_type_v});
  if (p.flash_attn) a.insert(a.end(), {"-fa", *p.flash_attn ? "on" : "off"});
  for (const auto& l : p.lora) a.insert(a.end(), {"--lora-scaled", l.path.string() + ":" + number(l.scale)});
  // The VRAM ledger calibrates from the buffer sizes the child logs at load; b10470 prints them
  // only at verbosity 4 (~35 extra lines per request, in the rotated child log).
  if (!sets_verbosity(p.extra_args)) a.insert(a.end(), {"-lv", "4"});
  a.insert(a.end(), p.extra_args.begin(), p.extra_args.end());
  return a;
}

std::vector<std::string> build_argv(const Profile& p, const std::string& host, int port) {
  return build_argv_text(p, host, std::to_string(port));
}

std::string shell_join(const std::vector<std::string>& argv) {
  static const std::string safe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%";
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    if (!w.empty() && w.find_first_not_of(safe) == std::string::npos) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace kevlaya::config
