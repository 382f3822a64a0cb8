// The backend keys of a profile (docs/configuration.md, "Backends"): the stop settings, a remote's
// key, and the checks that tie `backend` to the keys only it uses. Every key that validates is used:
// a key of another backend is an error, not silently ignored.
#include <sys/stat.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "common/bounded_file.hpp"
#include "common/strings.hpp"
#include "config/detail.hpp"

namespace kevlaya::config::detail {

namespace {

// First non-empty line of `text`, trimmed (a key file written by `echo KEY > file`).
std::string first_line(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const auto b = line.find_first_not_of(" \t\r"); b != std::string::npos)
      return line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
  return {};
}

// `{word}` placeholders of a template that are not known (a typo would reach the server verbatim).
void check_placeholders(Doc& d, const std::string& key, const YAML::Node& n,
                        const std::vector<std::string>& words, bool pid_ok) {
  static const std::regex re("\\{[a-z_]+\\}");
  const auto& known = command_placeholders();
  for (std::size_t i = 0; i < words.size(); ++i) {
    const YAML::Node at = n.IsSequence() && i < n.size() ? n[i] : n;
    for (std::sregex_iterator it(words[i].begin(), words[i].end(), re), end; it != end; ++it) {
      const std::string ph = it->str();
      const bool ok = std::find(known.begin(), known.end(), ph) != known.end() && (pid_ok || ph != "{pid}");
      if (ok) continue;
      std::vector<std::string> allowed;
      for (const auto& k : known)
        if (pid_ok || k != "{pid}") allowed.push_back(k);
      d.error(at, key + ": unknown placeholder " + ph + did_you_mean(ph, allowed) + "; known: " + join(allowed, " "));
    }
  }
}

}  // namespace

void read_stop(Doc& d, const YAML::Node& n, StopCfg& s, BackendNodes& nodes) {
  walk_map(d, "stop", n, {
      {"grace_s", [&](const YAML::Node& g) {
         if (auto v = read_number(d, "stop.grace_s", g)) s.grace_s = *v;
       }},
      {"signal", [&](const YAML::Node& v) {
         if (auto sig = read_enum(d, "stop.signal", v)) s.signal = *sig;
       }},
      {"command", [&](const YAML::Node& v) {
         nodes.stop_command.emplace(v);
         if (auto c = read_string_list(d, "stop.command", v, false)) {
           s.command = *c;
           check_placeholders(d, "stop.command", v, s.command, true);
           if (s.command.empty()) d.error(v, "stop.command: expected at least the program to run");
         }
       }},
      {"timeout_s", [&](const YAML::Node& v) {
         if (auto t = read_number(d, "stop.timeout_s", v)) s.command_timeout_s = *t;
       }},
  });
}

void read_command(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes) {
  nodes.command.emplace(n);
  auto c = read_string_list(d, "command", n, false);
  if (!c) return;
  p.command = *c;
  if (p.command.empty()) d.error(n, "command: expected at least the program to run");
  check_placeholders(d, "command", n, p.command, false);
}

void read_vram(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes) {
  nodes.vram_mib.emplace(n);
  if (auto v = read_int(d, "vram_mib", n)) p.vram_mib = *v;
}

std::optional<std::string> read_key_file(Doc& d, const YAML::Node& n, bool warn_shared) {
  const auto path = read_path(d, "api_key_file", n);
  if (!path) return std::nullopt;
  const auto read = read_bounded_file(*path, kMaxConfigFileBytes, "a key file");
  if (!read) {
    d.error(n, "api_key_file: cannot read " + display_path(*path) + ": " + read.error().message);
    return std::nullopt;
  }
  std::string key = first_line(read.value());
  if (key.empty()) d.error(n, "api_key_file: no key in " + display_path(*path));
  struct stat st {};
  if (warn_shared && ::stat(path->c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    d.warn(n, "api_key_file " + display_path(*path) + " is readable by other users (chmod 600 it)");
  return key;
}

void read_api_key_file(Doc& d, const YAML::Node& n, Profile& p, BackendNodes& nodes) {
  nodes.api_key.emplace(n);
  if (auto key = read_key_file(d, n, true)) p.api_key = *key;
}

// Conflicts between fields, checked once the whole document is read.
void check_backend(Doc& d, Profile& p, const YAML::Node& at, const BackendNodes& n) {
  const bool remote = p.backend == Backend::remote, command = p.backend == Backend::command;
  if (remote && p.url.empty())
    d.error(at, "backend 'remote' needs 'url' (the base URL of a server kevlaya-orch does not start)");
  if (!remote && n.url) d.error(*n.url, "'url' is only used with backend 'remote'");
  if (!remote && n.api_key) d.error(*n.api_key, "'api_key'/'api_key_file' are only used with backend 'remote'");
  if (remote && n.url) {
    std::string err;
    if (!parse_http_url(p.url, &err)) d.error(*n.url, "url: " + err);
  }
  if (command && p.command.empty() && !n.command)
    d.error(at, "backend 'command' needs 'command' (the argv template to start the server)");
  if (!command && n.command) d.error(*n.command, "'command' is only used with backend 'command'");
  if (p.backend != Backend::llama_server && n.binary)
    d.error(*n.binary, command ? "'binary' is not used with backend 'command': the first word of 'command' is the program"
                               : "'binary' is not used with backend 'remote': nothing is started");
  if (!command && n.vram_mib)
    d.error(*n.vram_mib, p.backend == Backend::remote
                             ? "'vram_mib' is only used with backend 'command' (a remote holds no local GPU memory)"
                             : "'vram_mib' is only used with backend 'command' (the ledger reads llama-server's GGUF)");
  if (!command && n.stop_command) d.error(*n.stop_command, "'stop.command' is only used with backend 'command'");
  if (!command && n.ready_line) d.error(*n.ready_line, "'health.ready_line' is only used with backend 'command'");
  if (p.backend == Backend::llama_server && !n.model)
    d.error(d.root(), "missing required key 'model' (path of the .gguf file, relative to this file)");
  if (remote) {  // `model` is the name the remote knows the model by, not a file
    if (n.model)
      if (auto name = read_string(d, "model", *n.model)) p.remote_model = *name;
    p.model.clear();
    return;
  }
  if (!n.model || p.model.empty()) return;
  // A command server may take a model that is not a file (vLLM: a Hugging Face id): written
  // without a leading '/', './', '../' or '~/', it is passed as written.
  if (command) {
    const auto raw = read_string(d, "model", *n.model).value_or("");
    const bool path_like = raw.rfind("/", 0) == 0 || raw.rfind("./", 0) == 0 || raw.rfind("../", 0) == 0 ||
                           raw.rfind("~/", 0) == 0;
    if (!path_like) {
      p.model = raw;
      return;
    }
  }
  std::error_code ec;
  if (!fs::is_regular_file(p.model, ec) && !(command && fs::is_directory(p.model, ec)))
    d.error(*n.model, "model file not found: " + p.model.string());
}

}  // namespace kevlaya::config::detail

namespace kevlaya::config {

std::optional<HttpUrl> parse_http_url(const std::string& url, std::string* err) {
  static const std::regex re("http://(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?(/[^?#]*)?");
  std::smatch m;
  if (!std::regex_match(url, m, re)) {
    if (err)
      *err = url.rfind("https://", 0) == 0
                 ? "https is not supported: use http:// inside a private network, or a local TLS proxy"
                 : "expected http://HOST[:PORT][/PATH], got '" + url + "'";
    return std::nullopt;
  }
  HttpUrl u;
  u.host = m[1].str();
  if (u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  u.port = m[2].matched ? std::stoi(m[2].str()) : 80;
  if (u.port < 1 || u.port > 65535) {
    if (err) *err = "port out of range in '" + url + "'";
    return std::nullopt;
  }
  u.base_path = m[3].matched ? m[3].str() : "";
  while (!u.base_path.empty() && u.base_path.back() == '/') u.base_path.pop_back();
  return u;
}

}  // namespace kevlaya::config
