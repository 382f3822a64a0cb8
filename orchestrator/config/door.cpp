// The front door's security keys of kevlaya.yaml (docs/security.md): allowed_hosts, cors,
// tools, runs, and API keys read from a file or an environment variable.
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>

#include "common/bounded_file.hpp"
#include "common/bounded_json.hpp"
#include "common/strings.hpp"
#include "config/detail.hpp"

namespace kevlaya::config::detail {
namespace {

// A DNS name or IPv4 address, or a bracketed IPv6 address; no port, no scheme.
bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    for (char c : h.substr(1, h.size() - 2))
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
    return true;
  }
  for (char c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') return false;
  return true;
}

// "http(s)://host[:port]" exactly, as browsers send it in `Origin`, or the keyword "localhost"
// (any loopback origin on any port: http/gate.hpp).
bool valid_origin(std::string_view o) {
  if (o == "localhost" || o == "*") return true;
  std::string_view rest;
  if (o.rfind("http://", 0) == 0) rest = o.substr(7);
  else if (o.rfind("https://", 0) == 0) rest = o.substr(8);
  else return false;
  const auto bracket = rest.rfind(']');
  const auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    const auto port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    if (std::atoi(std::string(port).c_str()) > 65535) return false;
    rest = rest.substr(0, colon);
  }
  return valid_host(rest);
}

void add_keys_from(std::string_view text, std::vector<std::string>& keys, bool lines) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = lines ? text.find('\n', pos) : text.find_first_of(", \t\n", pos);
    auto item = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (item.empty() || (lines && item.front() == '#')) continue;
    keys.emplace_back(item);
  }
}

// A list compared without case: each item lower-cased, one that is not `valid` reported by index.
void read_lower_list(Doc& d, const std::string& key, const YAML::Node& n, bool (*valid)(std::string_view),
                     const std::string& expected, std::vector<std::string>& out) {
  auto list = read_string_list(d, key, n, false);
  if (!list) return;
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto item = ascii_lower((*list)[i]);
    if (valid(item)) out.push_back(std::move(item));
    else d.error(n[i], key + "[" + std::to_string(i) + "]: expected " + expected + ", got '" + (*list)[i] + "'");
  }
}

}  // namespace

void read_allowed_hosts(Doc& d, const YAML::Node& n, std::vector<std::string>& out) {
  read_lower_list(d, "allowed_hosts", n, valid_host,
                  "a host name or address without scheme or port (e.g. kev.lan)", out);
}

void read_cors(Doc& d, const YAML::Node& n, CorsCfg& c) {
  walk_map(d, "cors", n, {{"allowed_origins", [&](const YAML::Node& v) {
    read_lower_list(d, "cors.allowed_origins", v, valid_origin,
                    "an origin like http://localhost:3000 (scheme://host[:port], no path), 'localhost' (any "
                    "loopback origin) or '*' (any origin)",
                    c.allowed_origins);
  }}});
}

// An MCP servers document as llama-server reads it: a JSON object (its "mcpServers" map). Checked
// here so that a door whose tools host could not start refuses to start, naming the setting.
static void check_mcp_json(Doc& d, const YAML::Node& at, const std::string& what, std::string_view text) {
  auto parsed = parse_json_bounded(text);
  if (!parsed) {
    d.error(at, what + " is not valid JSON: " + parsed.error().message);
    return;
  }
  if (!parsed->is_object()) d.error(at, what + " must be a JSON object (llama-server's {\"mcpServers\": {...}})");
}

void read_tools(Doc& d, const YAML::Node& n, ToolsCfg& t) {
  t.loc = d.loc(n);
  walk_map(d, "tools", n, {
      {"builtin", [&](const YAML::Node& v) { set_string(d, "tools.builtin", v, t.builtin); }},
      {"mcp_servers", [&](const YAML::Node& v) {
         auto p = read_path(d, "tools.mcp_servers", v);
         if (!p) return;
         t.mcp_servers = *p;
         auto text = read_bounded_file(*p, 4 << 20, "tools.mcp_servers");
         if (!text) return d.error(v, "tools.mcp_servers: " + text.error().message + ": " + p->string());
         check_mcp_json(d, v, "tools.mcp_servers (" + p->string() + ")", *text);
       }},
      {"mcp_servers_json", [&](const YAML::Node& v) {
         set_string(d, "tools.mcp_servers_json", v, t.mcp_servers_json);
         check_mcp_json(d, v, "tools.mcp_servers_json", t.mcp_servers_json);
       }},
      {"binary", [&](const YAML::Node& v) { set_string(d, "tools.binary", v, t.binary); }},
      {"extra_args", [&](const YAML::Node& v) {
         if (auto a = read_string_list(d, "tools.extra_args", v, false)) t.extra_args = *a;
       }},
  });
  if (!t.mcp_servers.empty() && !t.mcp_servers_json.empty())
    d.error(n, "tools: give mcp_servers or mcp_servers_json, not both");
}

void read_runs(Doc& d, const YAML::Node& n, RunsCfg& r) {
  walk_map(d, "runs", n, {
      {"max_queued", [&](const YAML::Node& x) { set_int(d, "runs.max_queued", x, r.max_queued); }},
      {"max_queued_bytes", [&](const YAML::Node& x) { set_int64(d, "runs.max_queued_bytes", x, r.max_queued_bytes); }},
      {"max_kept_bytes", [&](const YAML::Node& x) { set_int64(d, "runs.max_kept_bytes", x, r.max_kept_bytes); }},
  });
}

void read_api_keys_file(Doc& d, const char* key, const YAML::Node& n, std::vector<std::string>& keys) {
  const auto path = read_path(d, key, n);
  if (!path) return;
  const auto read = read_bounded_file(*path, kMaxConfigFileBytes, "a key file");
  if (!read) {
    d.error(n, std::string(key) + ": cannot read " + display_path(*path) + ": " + read.error().message);
    return;
  }
  const std::string& text = read.value();
  const auto before = keys.size();
  add_keys_from(text, keys, true);
  if (keys.size() == before) d.error(n, std::string(key) + ": no key in " + display_path(*path) + " (one key per line)");
  struct stat st {};
  if (::stat(path->c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    d.warn(n, std::string(key) + " " + display_path(*path) + " is readable by other users (chmod 600 it)");
}

void read_api_keys_env(Doc& d, const char* key, const YAML::Node& n, std::vector<std::string>& keys) {
  const auto name = read_string(d, key, n);
  if (!name) return;
  bool ok = !name->empty() && !std::isdigit(static_cast<unsigned char>(name->front()));
  for (char c : *name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) {
    d.error(n, std::string(key) + ": expected an environment variable name, got '" + *name + "'");
    return;
  }
  const char* v = std::getenv(name->c_str());
  const auto before = keys.size();
  if (v) add_keys_from(v, keys, false);
  if (keys.size() == before)
    d.error(n, std::string(key) + ": environment variable " + *name + " is not set or holds no key");
}

}  // namespace kevlaya::config::detail
