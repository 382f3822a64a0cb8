// A llama-swap config.yaml -> kevlaya.yaml and profiles (see llama_swap.hpp, docs/from-llama-swap.md).
#include "config/llama_swap.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>

#include "common/strings.hpp"
#include "config/detail.hpp"
#include "config/emit.hpp"
#include "config/llama_swap_detail.hpp"

namespace kevlaya::config {
namespace {

using detail::Doc;

struct Importer {
  Doc& d;
  SwapImport& out;
  swap::Macros macros;
  std::optional<int> startup_timeout_s;  // healthCheckTimeout

  void note(const YAML::Node& at, const std::string& msg) {
    out.report.push_back(Diagnostic{Severity::warning, d.loc(at), msg});
  }
  // Safe on a missing key (yaml-cpp throws on a missing node's type).
  static std::string scalar(const YAML::Node& n) { return n.IsDefined() && n.IsScalar() ? n.Scalar() : std::string(); }
  static bool is_map(const YAML::Node& n) { return n.IsDefined() && n.IsMap(); }
  static bool is_seq(const YAML::Node& n) { return n.IsDefined() && n.IsSequence(); }

  std::map<std::string, std::string> names;  // model id -> its profile's name (groups, preload)

  // A kevlaya name for a llama-swap id, reported when it had to change.
  std::string name_for(const YAML::Node& at, const std::string& id, const char* what) {
    const std::string n = profile_name_from_id(id);
    if (n != id && !n.empty())
      note(at, std::string(what) + " '" + id + "' is served as '" + n + "': kevlaya-orch names are letters, digits, "
               "'.', '_' or '-'");
    return n;
  }

  bool taken(const std::string& n) const {
    return std::any_of(out.profiles.begin(), out.profiles.end(),
                       [&](const Profile& p) { return ascii_lower(p.name) == ascii_lower(n); });
  }

  // A profile's name, which is also its file's: never empty or hidden (model-N), never an earlier
  // profile's (-2, -3, ...: one file would overwrite the other).
  std::string profile_name(const YAML::Node& at, const std::string& id, const char* what) {
    std::string n = name_for(at, id, what);
    if (n.empty()) {
      n = "model-" + std::to_string(out.profiles.size() + 1);
      note(at, std::string(what) + " '" + id + "' has no letter or digit to name it by: served as '" + n + "'");
    }
    if (taken(n)) {
      std::string next;
      for (int k = 2; next.empty() || taken(next); ++k) next = n + "-" + std::to_string(k);
      note(at, std::string(what) + " '" + id + "' is named like an earlier profile ('" + n + "'): served as '" + next + "'");
      n = next;
    }
    names.emplace(id, n);
    return n;
  }

  // The profile name a group member or preload entry means (an id of `models`).
  std::string name_of(const std::string& id) const {
    const auto it = names.find(id);
    return it != names.end() ? it->second : profile_name_from_id(id);
  }

  void read_macros(const YAML::Node& n, swap::Macros& into, const std::string& model_id) {
    if (!is_map(n)) return note(n, "macros: expected a mapping; ignored");
    for (const auto& kv : n) {
      std::vector<std::string> bad;
      std::string v = swap::expand(scalar(kv.second), into, model_id, bad);
      for (const auto& b : bad) note(kv.second, "macro '" + kv.first.Scalar() + "' uses " + b);
      into.emplace_back(kv.first.Scalar(), std::move(v));
    }
  }

  void read_env(const YAML::Node& n, Profile& p) {
    if (!is_seq(n)) return note(n, "env: expected a list of NAME=value; ignored");
    for (const auto& e : n) {
      const std::string s = scalar(e);
      const auto eq = s.find('=');
      if (eq == std::string::npos) { note(e, "env entry '" + s + "' has no '='; ignored"); continue; }
      const std::string key = s.substr(0, eq), value = swap::env_references(s.substr(eq + 1));
      static const std::regex ints("[0-9]+(,[0-9]+)*");
      if (key == "CUDA_VISIBLE_DEVICES" && p.backend == Backend::llama_server && std::regex_match(value, ints)) {
        for (std::size_t at = 0; at < value.size();) {  // the placement owns the variable: `gpu:` says the same
          auto end = value.find(',', at);
          if (end == std::string::npos) end = value.size();
          p.gpu.push_back(swap::parse_int(value.substr(at, end - at)).value_or(0));
          at = end + 1;
        }
        std::sort(p.gpu.begin(), p.gpu.end());
        note(e, "CUDA_VISIBLE_DEVICES=" + value + " is the profile key gpu: [" + value + "] (GPU indexes in NVML order)");
      } else if (key == "CUDA_DEVICE_ORDER" && p.backend == Backend::llama_server) {
        note(e, "CUDA_DEVICE_ORDER: kevlaya-orch sets it for the placement; dropped");
      } else {
        p.env[key] = value;
      }
    }
  }

  void read_aliases(const YAML::Node& n, Profile& p) {
    if (!is_seq(n)) return note(n, "aliases: expected a list; ignored");
    for (const auto& a : n) {
      const std::string id = is_map(a) ? scalar(a["id"]) : scalar(a);
      if (is_map(a) && scalar(a["unlisted"]) == "true")
        note(a, "alias '" + id + "': unlisted has no kevlaya-orch equivalent (every name is in /v1/models)");
      if (!id.empty()) p.alias.push_back(name_for(a, id, "alias"));
    }
  }

  // The port a fixed `proxy:` URL names, for a command profile whose cmd hard-codes it.
  void read_proxy(const YAML::Node& n, Profile& p) {
    static const std::regex re(R"(https?://(127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0)(:([0-9]+))?/?)");
    const std::string s = scalar(n);
    std::smatch m;
    if (s.find("${PORT}") != std::string::npos) return;  // the allocated port: kevlaya-orch's own
    if (!std::regex_match(s, m, re) || !m[3].matched)
      return note(n, "proxy '" + s + "': only a local http://127.0.0.1:PORT maps (kevlaya-orch starts the server "
                     "itself); for a server elsewhere write a backend: remote profile");
    if (p.backend == Backend::command) p.port = swap::parse_int(m[3].str()).value_or(0);
  }

  void model(const YAML::Node& key, const YAML::Node& n);
  void group(const std::string& id, const YAML::Node& n, std::vector<bool>& rotate);
  void peer(const std::string& id, const YAML::Node& n);
  void top(const std::string& key, const YAML::Node& v, std::string& yaml, std::vector<bool>& rotate);
};

void Importer::model(const YAML::Node& key, const YAML::Node& n) {
  const std::string id = key.Scalar();
  if (!is_map(n) || !n["cmd"]) return d.error(key, "model '" + id + "': expected a mapping with 'cmd'");
  Profile p;
  p.name = profile_name(key, id, "model");
  swap::Macros local = macros;
  if (n["macros"]) read_macros(n["macros"], local, id);
  std::vector<std::string> bad, notes;
  const std::string cmd = swap::expand(scalar(n["cmd"]), local, id, bad);
  for (const auto& b : bad) note(n["cmd"], "cmd uses " + b);
  swap::map_command(split_command(cmd), d.dir(), p, notes);
  for (const auto& s : notes) note(n["cmd"], "cmd: " + s);
  if (startup_timeout_s) p.health.startup_timeout_s = *startup_timeout_s;
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    std::vector<std::string> b2;
    if (k == "cmd" || k == "macros") continue;
    if (k == "env") read_env(v, p);
    else if (k == "aliases") read_aliases(v, p);
    else if (k == "proxy") read_proxy(v, p);
    else if (k == "ttl") {
      const int ttl = swap::parse_int(scalar(v)).value_or(-2);
      if (ttl >= 0) p.idle_unload_s = ttl;  // -1: the global value (idle_unload_s in kevlaya.yaml)
      else if (ttl != -1) note(v, "ttl: expected a whole number of seconds; ignored");
    } else if (k == "checkEndpoint") {
      const std::string path = swap::expand(scalar(v), local, id, b2);
      if (path == "none") note(v, "checkEndpoint none: kevlaya-orch always waits for a ready server; health.path stays /health");
      else if (!path.empty() && path[0] == '/') p.health.path = path;
      else note(v, "checkEndpoint '" + path + "': not a path starting with '/'; health.path stays /health");
    } else if (k == "cmdStop") {
      if (p.backend != Backend::command) {
        note(v, "cmdStop: a llama-server child is stopped by signal (stop.signal); dropped");
        continue;
      }
      for (std::string w : split_command(swap::expand(scalar(v), local, id, b2))) {
        const std::pair<std::string, std::string> subs[] = {{"${PID}", "{pid}"}, {"${PORT}", "{port}"}};
        for (const auto& [from, to] : subs)
          for (auto at = w.find(from); at != std::string::npos; at = w.find(from)) w.replace(at, from.size(), to);
        p.stop.command.push_back(w);
      }
    } else if (k == "unlisted") {
      if (scalar(v) == "true") note(v, "unlisted: no kevlaya-orch equivalent; '" + p.name + "' is listed in /v1/models");
    } else {
      note(kv.first, "model key '" + k + "' is not mapped (no kevlaya-orch equivalent)");
    }
  }
  out.profiles.push_back(std::move(p));
}

// Legacy groups: kevlaya-orch has no declared groups; the ledger decides who may run together.
void Importer::group(const std::string& id, const YAML::Node& n, std::vector<bool>& rotate) {
  const auto flag = [&](const char* k, bool def) { return n[k] ? scalar(n[k]) == "true" : def; };  // n is a map
  const bool swap_on = flag("swap", true), persistent = flag("persistent", false);
  rotate.push_back(swap_on && !persistent);
  std::vector<std::string> members;
  if (is_seq(n["members"]))
    for (const auto& m : n["members"]) members.push_back(name_of(scalar(m)));
  if (persistent) {
    for (auto& p : out.profiles)
      if (std::find(members.begin(), members.end(), p.name) != members.end()) p.pin = true;
    note(n, "group '" + id + "' is persistent: its members are pinned (pin: true; the ledger must fit them beside the others)");
  }
  note(n, std::string("group '") + id + "': " + (swap_on ? "swap (one member at a time)" : "members run together") +
              (flag("exclusive", true) ? ", exclusive" : "") +
              " is approximated: kevlaya-orch's ledger decides which profiles fit together (residency)");
}

void Importer::peer(const std::string& id, const YAML::Node& n) {
  const std::string url = scalar(n["proxy"]);
  if (url.rfind("http://", 0) != 0) {
    note(n, "peer '" + id + "': " + url + " is not plain http (kevlaya-orch's remote profiles are http only); not imported");
    return;
  }
  const std::string key = swap::env_references(scalar(n["apiKey"]));  // a reference: read at load, never written
  if (is_seq(n["models"])) {
    for (const auto& m : n["models"]) {
      Profile p;
      p.backend = Backend::remote;
      p.name = profile_name(m, scalar(m), "peer model");
      p.url = url;
      p.remote_model = scalar(m) == p.name ? "" : scalar(m);
      p.api_key = key;
      out.profiles.push_back(std::move(p));
    }
  }
  for (const char* k : {"filters", "timeouts"})
    if (n[k]) note(n[k], "peer '" + id + "': " + k + " is not mapped");
}

std::string flow_list(const std::vector<std::string>& v) {
  return "[" + join(v, ", ", [](const std::string& x) { return yaml_scalar(x); }) + "]";
}

void Importer::top(const std::string& k, const YAML::Node& v, std::string& yaml, std::vector<bool>& rotate) {
  if (k == "models") {
    if (!is_map(v)) return d.error(v, "models: expected a mapping of model id to settings");
    for (const auto& kv : v) model(kv.first, kv.second);
  } else if ((k == "groups" || k == "peers" || k == "hooks") && !is_map(v)) {
    note(v, k + ": expected a mapping; not imported");
  } else if (k == "groups") {
    for (const auto& kv : v)
      if (is_map(kv.second)) group(kv.first.Scalar(), kv.second, rotate);
  } else if (k == "peers") {
    for (const auto& kv : v)
      if (is_map(kv.second)) peer(kv.first.Scalar(), kv.second);
  } else if (k == "globalTTL") {
    const int ttl = swap::parse_int(scalar(v)).value_or(-1);
    if (ttl >= 0) yaml += "idle_unload_s: " + std::to_string(ttl) + "\n";
    else note(v, "globalTTL: expected a whole number of seconds >= 0; idle_unload_s left at kevlaya-orch's 600");
  } else if (k == "apiKeys") {
    std::vector<std::string> keys;
    if (is_seq(v))
      for (const auto& x : v) keys.push_back(swap::env_references(scalar(x)));
    YAML::Emitter e;  // double-quoted, not escaped: a ${VAR} reference is read at load
    e << YAML::Flow << YAML::BeginSeq;
    for (const auto& x : keys) e << YAML::DoubleQuoted << x;
    e << YAML::EndSeq;
    yaml += std::string("api_keys: ") + e.c_str() + "\n";
  } else if (k == "hooks") {
    for (const auto& h : v)
      if (h.first.Scalar() != "on_startup") note(h.first, "hook '" + h.first.Scalar() + "' is not mapped");
    const YAML::Node pre = is_map(v["on_startup"]) ? v["on_startup"]["preload"] : YAML::Node();
    std::vector<std::string> preload;
    if (is_seq(pre))
      for (const auto& m : pre) preload.push_back(name_of(scalar(m)));
    if (!preload.empty()) yaml += "preload: " + flow_list(preload) + "\n";
  } else if (k == "startPort") {
    note(v, "startPort: not needed; kevlaya-orch allocates each child's port (${PORT})");
  } else if (k == "matrix") {
    note(v, "matrix: the set DSL is not mapped; kevlaya-orch's ledger computes which profiles fit together "
            "(kevlaya-orch plan shows the allowed sets; pin: true keeps one resident)");
  } else {
    note(v, "'" + k + "' is not mapped (no kevlaya-orch equivalent)");
  }
}

}  // namespace

std::string imported_profile_yaml(const Profile& p, const SwapImport& im) {
  std::string y = profile_yaml(p);
  for (const auto& var : im.env_refs) {
    const std::string escaped = "$${" + var + "}";
    for (auto at = y.find(escaped); at != std::string::npos; at = y.find(escaped, at)) y.erase(at, 1);
  }
  return y;
}

SwapImport import_llama_swap(const fs::path& file) {
  SwapImport out;
  Doc d(file, out.errors);
  if (!d.load()) return out;
  if (!d.root().IsMap() || !d.root()["models"]) {
    d.error(d.root(), "not a llama-swap configuration: no 'models' mapping");
    return out;
  }
  Importer im{d, out, {}, {}, {}};
  (void)swap::env_references(d.text(), &out.env_refs);
  std::string yaml = "# Imported from " + display_path(file) + " by `kevlaya-orch import llama-swap`.\n"
                     "profiles_dir: profiles\n";
  if (!d.root()["globalTTL"]) yaml += "idle_unload_s: 0  # llama-swap's default: never unload when idle\n";
  if (const auto m = d.root()["macros"]) im.read_macros(m, im.macros, "");
  if (const auto h = d.root()["healthCheckTimeout"])
    im.startup_timeout_s = std::max(15, swap::parse_int(im.scalar(h)).value_or(120));
  std::vector<bool> rotate;
  im.top("models", d.root()["models"], yaml, rotate);  // first: groups pin their members
  for (const auto& kv : d.root()) {
    const std::string k = kv.first.Scalar();
    if (k == "macros" || k == "healthCheckTimeout" || k == "models") continue;
    if (k == "logLevel" || k == "logTimeFormat" || k == "logToStdout" || k == "metricsMaxInMemory" ||
        k == "captureBuffer" || k == "sendLoadingState" || k == "includeAliasesInList") {
      im.note(kv.first, "'" + k + "' is not mapped (kevlaya-orch's own: --log-level, /metrics, /events)");
      continue;
    }
    im.top(k, kv.second, yaml, rotate);
  }
  if (!rotate.empty() && std::all_of(rotate.begin(), rotate.end(), [](bool r) { return r; }))
    yaml += "residency: rotate  # every group swapped: one model at a time\n";
  out.orchestrator_yaml = yaml;
  return out;
}

}  // namespace kevlaya::config
