// profiles/NAME.yaml -> Profile. Every field is checked where it is written; conflicts between
// fields (backend vs url/command) are checked once the whole document is read.
#include <algorithm>
#include <regex>

#include "common/bytes.hpp"
#include "config/detail.hpp"
#include "config/flags.hpp"

namespace kevlaya::config::detail {

namespace {

// Never throws: a path too long for the OS (ENAMETOOLONG) is simply not a file.
bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool valid_name(const std::string& s) {
  static const std::regex re("[A-Za-z0-9][A-Za-z0-9._-]*");
  return std::regex_match(s, re);
}

void read_ngl(Doc& d, const YAML::Node& n, int& dst) {
  if (n.IsScalar() && n.Scalar() == "all") {
    dst = -1;
    return;
  }
  if (!n.IsScalar()) {
    d.error(n, "ngl: expected an integer or 'all', got " + describe(n));
    return;
  }
  const auto v = read_int(d, "ngl", n, INT64_MIN, INT64_MAX);
  if (!v) return;
  if (*v < d.key("ngl").lo || *v > d.key("ngl").hi) {
    d.error(n, "ngl must be a number of layers >= 0 or 'all', got " + std::to_string(*v));
    return;
  }
  dst = static_cast<int>(*v);
}

// `gpu: auto` (default), `gpu: 1`, or `gpu: [0, 1]` (split across them): distinct indexes, ascending.
void read_gpu_request(Doc& d, const YAML::Node& n, std::vector<int>& dst) {
  dst.clear();
  if (n.IsScalar() && n.Scalar() == "auto") return;
  if (!n.IsScalar() && !n.IsSequence()) {
    d.error(n, "gpu: expected 'auto', a device index or a list of device indexes, got " + describe(n));
    return;
  }
  std::vector<YAML::Node> items;
  if (n.IsScalar()) items.push_back(n);
  else for (const auto& x : n) items.push_back(x);
  if (items.empty()) d.error(n, "gpu: an empty list names no device; write 'auto' to let the planner choose");
  for (const auto& x : items) {
    const auto v = read_int(d, "gpu", x);
    if (!v) continue;
    if (std::find(dst.begin(), dst.end(), static_cast<int>(*v)) != dst.end()) {
      d.error(x, "gpu: device " + std::to_string(*v) + " is listed twice");
      continue;
    }
    dst.push_back(static_cast<int>(*v));
  }
  std::sort(dst.begin(), dst.end());
}

void read_health(Doc& d, const YAML::Node& n, HealthCfg& h, BackendNodes& nodes) {
  walk_map(d, "health", n, {
      {"status", [&](const YAML::Node& v) { set_int(d, "health.status", v, h.status); }},
      {"ready_line", [&](const YAML::Node& v) {
         nodes.ready_line.emplace(v);
         set_string(d, "health.ready_line", v, h.ready_line);
         if (h.ready_line.empty()) d.error(v, "health.ready_line must not be empty");
       }},
      {"check_interval_s", [&](const YAML::Node& v) { set_int(d, "health.check_interval_s", v, h.check_interval_s); }},
      {"backoff_max_s", [&](const YAML::Node& v) { set_int(d, "health.backoff_max_s", v, h.backoff_max_s); }},
      {"path", [&](const YAML::Node& v) {
         set_string(d, "health.path", v, h.path);
         if (!h.path.empty() && h.path[0] != '/') d.error(v, "health.path must start with '/'");
       }},
      {"first_probe_ms", [&](const YAML::Node& v) { set_int(d, "health.first_probe_ms", v, h.first_probe_ms); }},
      {"interval_ms", [&](const YAML::Node& v) { set_int(d, "health.interval_ms", v, h.interval_ms); }},
      {"probe_timeout_ms", [&](const YAML::Node& v) { set_int(d, "health.probe_timeout_ms", v, h.probe_timeout_ms); }},
      {"first_byte_timeout_s", [&](const YAML::Node& v) { set_int(d, "health.first_byte_timeout_s", v, h.first_byte_timeout_s); }},
      {"chunk_timeout_s", [&](const YAML::Node& v) { set_int(d, "health.chunk_timeout_s", v, h.chunk_timeout_s); }},
      {"hung_check_s", [&](const YAML::Node& v) { set_int(d, "health.hung_check_s", v, h.hung_check_s); }},
      {"startup_timeout_s", [&](const YAML::Node& v) { set_int(d, "health.startup_timeout_s", v, h.startup_timeout_s); }},
      {"stall_timeout_s", [&](const YAML::Node& v) { set_int(d, "health.stall_timeout_s", v, h.stall_timeout_s); }},
  });
}

void read_restart(Doc& d, const YAML::Node& n, RestartCfg& r) {
  walk_map(d, "restart", n, {
      {"max_restarts", [&](const YAML::Node& v) { set_int(d, "restart.max_restarts", v, r.max_restarts); }},
      {"window_s", [&](const YAML::Node& v) { set_int(d, "restart.window_s", v, r.window_s); }},
      {"backoff_initial_ms", [&](const YAML::Node& v) { set_int(d, "restart.backoff_initial_ms", v, r.backoff_initial_ms); }},
      {"backoff_max_s", [&](const YAML::Node& v) { set_int(d, "restart.backoff_max_s", v, r.backoff_max_s); }},
      {"cooldown_s", [&](const YAML::Node& v) { set_int(d, "restart.cooldown_s", v, r.cooldown_s); }},
  });
}

void read_lora(Doc& d, const YAML::Node& n, std::vector<LoraSpec>& out) {
  if (!n.IsSequence()) {
    d.error(n, "lora: expected a list of {name, path, scale}, got " + describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string key = "lora[" + std::to_string(i) + "]";
    LoraSpec l;
    bool has_path = false;
    walk_map(d, key, n[i], {
        {"name", [&](const YAML::Node& v) { set_string(d, key + ".name", v, l.name); }},
        {"path", [&](const YAML::Node& v) {
           if (auto p = read_path(d, key + ".path", v)) {
             l.path = *p;
             has_path = true;
             const std::string s = p->string();
             if (s.find_first_of(":,") != std::string::npos)  // --lora-scaled FNAME:SCALE,...
               d.error(v, key + ".path must not contain ':' or ',' (llama-server's --lora-scaled "
                               "cannot express them): " + s);
             else if (!is_file(*p))
               d.error(v, "LoRA file not found: " + s);
           }
         }},
        {"scale", [&](const YAML::Node& v) {
           if (auto s = read_number(d, key + ".scale", v)) l.scale = *s;
         }},
    });
    if (!n[i].IsMap()) continue;
    if (!has_path) {
      d.error(n[i], key + ": missing required key 'path'");
      continue;
    }
    if (l.name.empty()) l.name = l.path.stem().string();
    out.push_back(std::move(l));
  }
}

void read_cache_type(Doc& d, const std::string& key, const YAML::Node& n, std::string& dst) {
  if (auto v = read_enum(d, key, n)) dst = *v;
}

const char* value_kind(FlagValue v) {
  return v == FlagValue::integer ? "an integer" : v == FlagValue::path ? "a path" : "a value";
}

// extra_args judged by the flag table (config/flags.hpp): a flag kevlaya-orch sets per spawn is an
// error, one a profile key writes is a warning, a known flag without a valid value is an error.
void check_extra_args(Doc& d, const YAML::Node& n, const std::vector<std::string>& args) {
  for (const FlagUse& use : scan_flags(args)) {
    const LlamaFlag& f = *use.flag;
    const std::string word = args[use.index].substr(0, args[use.index].find('='));
    const YAML::Node at = n.IsSequence() && use.index < n.size() ? n[use.index] : n;
    if (f.owner == FlagOwner::orchestrator) {
      d.error(at, "extra_args sets '" + word + "', which kevlaya-orch chooses for each spawn" +
                      (f.key == "slot_cache" ? "; use the profile's slot_cache.enabled instead (the door "
                                               "keeps the slot files under state_dir/slots/NAME)"
                       : f.key == "api_key" ? "; to require a key from clients set api_keys (or api_keys_file, "
                                              "api_keys_env) in kevlaya.yaml: the door checks it, and each "
                                              "child gets its own secret key"
                       : f.key == "main_gpu" || f.key == "tensor_split" || f.key == "device"
                           ? " from the GPU placement; use the profile key 'gpu' instead"
                                            : "; use the profile's 'port' or the orchestrator's listen settings instead"));
    } else if (f.owner == FlagOwner::profile) {
      d.warn(at, "extra_args repeats '" + word + "', which the profile already sets; the later "
                 "value wins in llama-server, prefer the profile key '" + std::string(f.key) + "'");
    }
    if (f.value == FlagValue::none) continue;
    if (!use.value) {
      d.error(at, "extra_args: '" + word + "' needs " + value_kind(f.value) + " after it");
    } else if (f.value == FlagValue::integer && !std::regex_match(*use.value, std::regex("-?[0-9]{1,9}"))) {
      d.error(at, "extra_args: '" + word + "' needs an integer, got '" + *use.value + "'");
    }
  }
}

}  // namespace

void parse_profile(Doc& d, std::vector<Profile>& out, std::vector<ProfileLocs>& locs) {
  d.set_kind(DocKind::profile);
  const YAML::Node& root = d.root();
  Profile p;
  ProfileLocs pl;
  p.loc = d.loc(root);
  p.name = d.file().stem().string();
  pl.name = p.loc;
  // Optional, not plain Node: assigning to a Node overwrites the node it refers to.
  std::optional<YAML::Node> backend_node, alias_node, env_node;
  BackendNodes nodes;
  bool name_set = false;
  const bool ok = walk_map(d, "profile", root, {
      {"name", [&](const YAML::Node& v) {
         name_set = true;
         set_string(d, "name", v, p.name);
         pl.name = d.loc(v);
         if (!valid_name(p.name))
           d.error(v, "name must be letters, digits, '.', '_' or '-', got '" + printable(p.name) + "'");
       }},
      {"backend", [&](const YAML::Node& v) {
         backend_node.emplace(v);
         if (auto b = read_enum(d, "backend", v))
           p.backend = *b == "command" ? Backend::command
                       : *b == "remote" ? Backend::remote : Backend::llama_server;
       }},
      {"binary", [&](const YAML::Node& v) {
         nodes.binary.emplace(v);
         set_string(d, "binary", v, p.binary);
       }},
      {"model", [&](const YAML::Node& v) {
         nodes.model.emplace(v);
         if (auto m = read_path(d, "model", v)) p.model = *m;
       }},
      {"quant", [&](const YAML::Node& v) { set_string(d, "quant", v, p.quant); }},
      {"ngl", [&](const YAML::Node& v) { read_ngl(d, v, p.ngl); }},
      {"ctx", [&](const YAML::Node& v) { set_int(d, "ctx", v, p.ctx); }},
      {"parallel", [&](const YAML::Node& v) { set_int(d, "parallel", v, p.parallel); }},
      {"batch", [&](const YAML::Node& v) { set_int(d, "batch", v, p.batch); }},
      {"cache_type_k", [&](const YAML::Node& v) { read_cache_type(d, "cache_type_k", v, p.cache_type_k); }},
      {"cache_type_v", [&](const YAML::Node& v) { read_cache_type(d, "cache_type_v", v, p.cache_type_v); }},
      {"flash_attn", [&](const YAML::Node& v) { if (auto b = read_bool(d, "flash_attn", v)) p.flash_attn = *b; }},
      {"lora", [&](const YAML::Node& v) { read_lora(d, v, p.lora); }},
      {"alias", [&](const YAML::Node& v) {
         alias_node.emplace(v);
         if (auto a = read_string_list(d, "alias", v, true)) p.alias = *a;
       }},
      {"tags", [&](const YAML::Node& v) {
         if (auto t = read_string_list(d, "tags", v, true)) p.tags = *t;
       }},
      {"extra_args", [&](const YAML::Node& v) {
         if (auto a = read_string_list(d, "extra_args", v, false)) {
           p.extra_args = *a;
           check_extra_args(d, v, p.extra_args);
         }
       }},
      {"env", [&](const YAML::Node& v) {
         env_node.emplace(v);
         if (auto m = read_string_map(d, "env", v)) p.env = *m;
       }},
      {"port", [&](const YAML::Node& v) {
         pl.port = d.loc(v);
         if (auto n = read_int(d, "port", v)) p.port = static_cast<int>(*n);
       }},
      {"command", [&](const YAML::Node& v) { read_command(d, v, p, nodes); }},
      {"vram_mib", [&](const YAML::Node& v) { read_vram(d, v, p, nodes); }},
      {"url", [&](const YAML::Node& v) {
         nodes.url.emplace(v);
         set_string(d, "url", v, p.url);
       }},
      {"api_key", [&](const YAML::Node& v) {
         nodes.api_key.emplace(v);
         set_string(d, "api_key", v, p.api_key);
       }},
      {"api_key_file", [&](const YAML::Node& v) { read_api_key_file(d, v, p, nodes); }},
      {"health", [&](const YAML::Node& v) { read_health(d, v, p.health, nodes); }},
      {"stop", [&](const YAML::Node& v) { read_stop(d, v, p.stop, nodes); }},
      {"restart", [&](const YAML::Node& v) { read_restart(d, v, p.restart); }},
      {"shared_base", [&](const YAML::Node& v) { if (auto b = read_bool(d, "shared_base", v)) p.shared_base = *b; }},
      {"gpu", [&](const YAML::Node& v) {
         pl.gpu = d.loc(v);
         read_gpu_request(d, v, p.gpu);
       }},
      {"idle_unload_s", [&](const YAML::Node& v) {
         if (auto n = read_int(d, "idle_unload_s", v)) p.idle_unload_s = static_cast<int>(*n);
       }},
      {"pin", [&](const YAML::Node& v) { set_bool(d, "pin", v, p.pin); }},
      {"loading_messages", [&](const YAML::Node& v) {
         if (auto m = read_enum(d, "loading_messages", v))
           p.loading_messages = *m == "reasoning" ? LoadingMessages::reasoning : LoadingMessages::comments;
       }},
      {"evict", [&](const YAML::Node& v) {
         walk_map(d, "evict", v, {
             {"policy", [&](const YAML::Node& e) {
                if (auto m = read_enum(d, "evict.policy", e)) p.evict.protect = *m == "protect";
              }},
             {"idle_s", [&](const YAML::Node& e) { set_int(d, "evict.idle_s", e, p.evict.idle_s); }},
             {"max_wait_s", [&](const YAML::Node& e) { set_int(d, "evict.max_wait_s", e, p.evict.max_wait_s); }},
         });
       }},
      {"slot_cache", [&](const YAML::Node& v) {
         walk_map(d, "slot_cache", v, {
             {"enabled", [&](const YAML::Node& e) { set_bool(d, "slot_cache.enabled", e, p.slot_cache.enabled); }},
             {"max_bytes", [&](const YAML::Node& m) { set_int64(d, "slot_cache.max_bytes", m, p.slot_cache.max_bytes); }},
         });
       }},
  });
  if (!ok) return;
  if (!name_set && !valid_name(p.name))  // the name is an API model id: bytes of a path won't do
    d.error(p.loc, "profile name '" + printable(p.name) + "' comes from the file name and must be letters, "
                   "digits, '.', '_' or '-'; rename the file or set 'name:' in it");
  check_backend(d, p, backend_node ? *backend_node : root, nodes);
  if (p.backend == Backend::llama_server) {  // the placement owns the device choice of a llama-server child
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"})
      if (p.env.count(var))
        d.error(*env_node, std::string("env sets ") + var + ", which kevlaya-orch sets from the GPU placement; "
                           "use the profile key 'gpu' (e.g. gpu: 1) instead");
  }
  if (p.backend != Backend::llama_server && !p.gpu.empty())
    d.error(pl.gpu, "'gpu' is only used with backend 'llama-server' (other backends choose their own devices)");
  for (std::size_t i = 0; i < p.alias.size(); ++i) {
    const YAML::Node& a = *alias_node;
    pl.alias.push_back(a.IsSequence() && i < a.size() ? d.loc(a[i]) : d.loc(a));
    if (!valid_name(p.alias[i]))
      d.error(pl.alias.back(), "alias must be letters, digits, '.', '_' or '-', got '" +
                                   printable(p.alias[i]) + "'");
  }
  out.push_back(std::move(p));
  locs.push_back(std::move(pl));
}

}  // namespace kevlaya::config::detail

namespace kevlaya::config {
namespace {

// Every profile and alias, for the message of an unknown or missing model.
std::string known_models(const Config& cfg) {
  std::string out;
  for (const auto& p : cfg.profiles) {
    out += (out.empty() ? "" : ", ") + p.name;
    for (const auto& a : p.alias) out += ", " + a + " (alias of " + p.name + ")";
  }
  return out.empty() ? "(none configured)" : out;
}

// A profile or alias, also with Ollama's default tag ("kev:latest" names kev).
const Profile* find_tagged(const Config& cfg, std::string_view name) {
  if (const auto* p = cfg.find_profile(std::string(name))) return p;
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.substr(name.size() - kLatest.size()) == kLatest)
    return cfg.find_profile(std::string(name.substr(0, name.size() - kLatest.size())));
  return nullptr;
}

}  // namespace

// A one-model llama-server ignores the name it is sent; the door does the same with one profile
// (or a default_model), so clients with a fixed name ("gpt-3.5-turbo") work unchanged.
Result<const Profile*> Config::resolve_model(std::string_view requested) const {
  if (!requested.empty())
    if (const auto* p = find_tagged(*this, requested)) return p;
  if (!orch.default_model.empty())
    if (const auto* p = find_profile(orch.default_model)) return p;
  if (profiles.size() == 1) return &profiles.front();
  if (requested.empty())
    return make_error(Errc::bad_request, "missing \"model\"; known models: " + known_models(*this),
                      "name one of them, or set default_model in kevlaya.yaml");
  return make_error(Errc::not_found, "unknown model '" + std::string(requested) + "'; known models: " +
                                         known_models(*this));
}

}  // namespace kevlaya::config
