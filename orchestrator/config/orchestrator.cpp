// kevlaya.yaml -> OrchestratorCfg, and load(): the orchestrator file plus every profile and
// pipeline it points to, with the checks that span documents (names, aliases, model references).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "common/bounded_file.hpp"
#include "common/credentials.hpp"
#include "common/loopback.hpp"
#include "config/detail.hpp"
#include "config/models_dir.hpp"

namespace kevlaya::config {

namespace detail {

namespace {

void read_devices(Doc& d, const YAML::Node& n, std::vector<DeviceCfg>& out) {
  if (!n.IsSequence() || n.size() == 0) {
    d.error(n, "gpu.devices: expected a non-empty list of {vram_mib, name}, got " + describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string key = "gpu.devices[" + std::to_string(i) + "]";
    DeviceCfg dev;
    bool has_vram = false;
    walk_map(d, key, n[i], {
        {"vram_mib", [&](const YAML::Node& v) {
           if (auto x = read_int(d, key + ".vram_mib", v)) { dev.vram_mib = *x; has_vram = true; }
         }},
        {"name", [&](const YAML::Node& v) { set_string(d, key + ".name", v, dev.name); }},
    });
    if (n[i].IsMap() && !has_vram) d.error(n[i], key + ": missing required key 'vram_mib'");
    out.push_back(std::move(dev));
  }
}

void read_gpu(Doc& d, const YAML::Node& n, GpuCfg& g) {
  std::optional<YAML::Node> vram_node, devices_node;
  walk_map(d, "gpu", n, {
      {"devices", [&](const YAML::Node& v) { devices_node.emplace(v); read_devices(d, v, g.devices); }},
      {"vram_mib", [&](const YAML::Node& v) {
         vram_node.emplace(v);
         if (v.IsScalar() && v.Scalar() == "auto") { g.vram_mib.reset(); return; }
         if (!v.IsScalar()) { d.error(v, "gpu.vram_mib: expected an integer or 'auto', got " + describe(v)); return; }
         if (auto x = read_int(d, "gpu.vram_mib", v)) g.vram_mib = *x;
       }},
      {"reserve_mib", [&](const YAML::Node& v) { set_int64(d, "gpu.reserve_mib", v, g.reserve_mib); }},
      {"overhead_mib", [&](const YAML::Node& v) { set_int64(d, "gpu.overhead_mib", v, g.overhead_mib); }},
  });
  // Two sources for one fact: refuse rather than pick one silently.
  if (g.vram_mib && devices_node)
    d.error(*vram_node, "gpu.vram_mib and gpu.devices are both set: vram_mib is the one-device shorthand; "
                        "list every device under gpu.devices instead");
}

// activity.session_headers: a header that carries a credential (common/credentials.hpp) is refused
// at its position, so that no key reaches the history or GET /activity.
void read_session_headers(Doc& d, const YAML::Node& n, std::vector<std::string>& out) {
  auto l = read_string_list(d, "activity.session_headers", n, true);
  if (!l) return;
  bool ok = true;
  for (std::size_t i = 0; i < l->size(); ++i) {
    if (!is_credential_header((*l)[i])) continue;
    const std::string key = n.IsSequence() ? "activity.session_headers[" + std::to_string(i) + "]" : "activity.session_headers";
    d.error(n.IsSequence() ? n[i] : n, key + ": '" + (*l)[i] + "' carries credentials; the request history never "
            "stores a credential header (name a session header instead, e.g. X-Session-ID)");
    ok = false;
  }
  if (ok) out = std::move(*l);
}

void read_sections(Doc& d, const std::string& name, const YAML::Node& v, OrchestratorCfg& o) {
  if (name == "listen") {
    walk_map(d, "listen", v, {
        {"host", [&](const YAML::Node& x) {
           set_string(d, "listen.host", x, o.listen.host);
           if (const auto why = listen_host_problem(o.listen.host); why && x.IsScalar()) d.error(x, "listen.host: " + *why);
         }},
        {"port", [&](const YAML::Node& x) { set_int(d, "listen.port", x, o.listen.port); }},
    });
  } else if (name == "queue") {
    walk_map(d, "queue", v, {
        {"max_depth", [&](const YAML::Node& x) { set_int(d, "queue.max_depth", x, o.queue.max_depth); }},
        {"max_wait_s", [&](const YAML::Node& x) { set_int(d, "queue.max_wait_s", x, o.queue.max_wait_s); }},
    });
  } else if (name == "activity") {
    auto& a = o.activity;
    walk_map(d, "activity", v, {
        {"enabled", [&](const YAML::Node& x) { set_bool(d, "activity.enabled", x, a.enabled); }},
        {"max_records", [&](const YAML::Node& x) { set_int64(d, "activity.max_records", x, a.max_records); }},
        {"max_age_days", [&](const YAML::Node& x) { set_int(d, "activity.max_age_days", x, a.max_age_days); }},
        {"max_mib", [&](const YAML::Node& x) { set_int(d, "activity.max_mib", x, a.max_mib); }},
        {"session_headers", [&](const YAML::Node& x) { read_session_headers(d, x, a.session_headers); }},
    });
  } else if (name == "capture") {
    walk_map(d, "capture", v, {
        {"enabled", [&](const YAML::Node& x) { set_bool(d, "capture.enabled", x, o.capture.enabled); }},
        {"max_mib", [&](const YAML::Node& x) { set_int(d, "capture.max_mib", x, o.capture.max_mib); }},
    });
  } else if (name == "scheduling") {
    auto& s = o.scheduling;
    walk_map(d, "scheduling", v, {
        {"max_wait_before_swap_ms", [&](const YAML::Node& x) { set_int(d, "scheduling.max_wait_before_swap_ms", x, s.max_wait_before_swap_ms); }},
        {"min_residency_ms", [&](const YAML::Node& x) { set_int(d, "scheduling.min_residency_ms", x, s.min_residency_ms); }},
        {"drain_timeout_s", [&](const YAML::Node& x) { set_int(d, "scheduling.drain_timeout_s", x, s.drain_timeout_s); }},
        {"switch_ahead", [&](const YAML::Node& x) { set_bool(d, "scheduling.switch_ahead", x, s.switch_ahead); }},
    });
  } else if (name == "prefetch") {
    walk_map(d, "prefetch", v, {
        {"enabled", [&](const YAML::Node& x) { set_bool(d, "prefetch.enabled", x, o.prefetch.enabled); }},
        {"min_available_mib", [&](const YAML::Node& x) { set_int64(d, "prefetch.min_available_mib", x, o.prefetch.min_available_mib); }},
    });
  } else if (name == "limits") {
    auto& l = o.limits;
    walk_map(d, "limits", v, {
        {"max_body_bytes", [&](const YAML::Node& x) { set_int64(d, "limits.max_body_bytes", x, l.max_body_bytes); }},
        {"max_connections", [&](const YAML::Node& x) { set_int(d, "limits.max_connections", x, l.max_connections); }},
        {"reserved_connections", [&](const YAML::Node& x) { set_int(d, "limits.reserved_connections", x, l.reserved_connections); }},
        {"header_timeout_s", [&](const YAML::Node& x) { set_int(d, "limits.header_timeout_s", x, l.header_timeout_s); }},
        {"read_timeout_s", [&](const YAML::Node& x) { set_int(d, "limits.read_timeout_s", x, l.read_timeout_s); }},
        {"idle_timeout_s", [&](const YAML::Node& x) { set_int(d, "limits.idle_timeout_s", x, l.idle_timeout_s); }},
        {"max_answer_bytes", [&](const YAML::Node& x) { set_int64(d, "limits.max_answer_bytes", x, l.max_answer_bytes); }},
    });
  }
}

void default_dirs(OrchestratorCfg& o, const fs::path& base) {
  o.profiles_dir = (base / "profiles").lexically_normal();
  o.pipelines_dir = (base / "pipelines").lexically_normal();
  o.state_dir = (base / "var/state").lexically_normal();
  o.log_dir = (base / "var/log").lexically_normal();
}

}  // namespace

// One kind of door key: NAME (a list), NAME_file and NAME_env; finish() checks the list and merges.
struct DoorKeys {
  DoorKeys(Doc& doc, std::string n, std::vector<std::string>& k) : d(doc), name(std::move(n)), keys(k) {}
  Doc& d;
  std::string name, file_key = name + "_file", env_key = name + "_env";
  std::vector<std::string>& keys;
  std::optional<YAML::Node> listed;
  std::vector<std::string> more;
  auto list() {
    return [this](const YAML::Node& v) {
      listed.emplace(v);
      if (auto k = read_string_list(d, name, v, false)) keys = *k;
    };
  }
  auto file() { return [this](const YAML::Node& v) { read_api_keys_file(d, file_key.c_str(), v, more); }; }
  auto env() { return [this](const YAML::Node& v) { read_api_keys_env(d, env_key.c_str(), v, more); }; }
  void finish() {
    if (listed && std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.empty(); }))
      d.error(*listed, name + ": an API key must not be empty (is an environment variable unset?)");
    keys.insert(keys.end(), more.begin(), more.end());
  }
};

void parse_orchestrator(Doc& d, OrchestratorCfg& o, bool& pipelines_dir_set) {
  d.set_kind(DocKind::orchestrator);
  o.file = d.file();
  o.loc = d.loc(d.root());
  default_dirs(o, d.dir());
  const auto dir = [&](const char* key, fs::path& dst) {
    return [&d, key, &dst](const YAML::Node& v) { if (auto p = read_path(d, key, v)) dst = *p; };
  };
  const auto section = [&](const char* key) {
    return [&d, key, &o](const YAML::Node& v) { read_sections(d, key, v, o); };
  };
  DoorKeys user(d, "api_keys", o.api_keys), admin(d, "admin_api_keys", o.admin_api_keys);
  walk_map(d, "orchestrator config", d.root(), {
      {"profiles_dir", dir("profiles_dir", o.profiles_dir)},
      {"pipelines_dir", [&](const YAML::Node& v) { pipelines_dir_set = true; dir("pipelines_dir", o.pipelines_dir)(v); }},
      {"state_dir", dir("state_dir", o.state_dir)},
      {"log_dir", dir("log_dir", o.log_dir)},
      {"gpu", [&](const YAML::Node& v) { read_gpu(d, v, o.gpu); }},
      {"listen", section("listen")},
      {"api_keys", user.list()},
      {"api_keys_file", user.file()},
      {"api_keys_env", user.env()},
      {"admin_api_keys", admin.list()},
      {"admin_api_keys_file", admin.file()},
      {"admin_api_keys_env", admin.env()},
      {"allowed_hosts", [&](const YAML::Node& v) { read_allowed_hosts(d, v, o.allowed_hosts); }},
      {"cors", [&](const YAML::Node& v) { read_cors(d, v, o.cors); }},
      {"tools", [&](const YAML::Node& v) { read_tools(d, v, o.tools); }},
      {"peers", [&](const YAML::Node& v) { read_peers(d, v, o.peers); }},
      {"runs", [&](const YAML::Node& v) { read_runs(d, v, o.runs); }},
      {"queue", section("queue")},
      {"residency", [&](const YAML::Node& v) {
         if (auto r = read_enum(d, "residency", v))
           o.residency = *r == "rotate" ? Residency::rotate
                         : *r == "co-resident" ? Residency::co_resident : Residency::auto_;
       }},
      {"activity", section("activity")},
      {"capture", section("capture")},
      {"scheduling", section("scheduling")},
      {"prefetch", section("prefetch")},
      {"limits", section("limits")},
      {"idle_unload_s", [&](const YAML::Node& v) { set_int(d, "idle_unload_s", v, o.idle_unload_s); }},
      {"keep_alive_max_s", [&](const YAML::Node& v) { set_int(d, "keep_alive_max_s", v, o.keep_alive_max_s); }},
      {"models_dir", [&](const YAML::Node& v) {
         o.models_dir_loc = d.loc(v);
         if (auto p = read_path(d, "models_dir", v)) o.models_dir = *p;
       }},
      {"models_binary", [&](const YAML::Node& v) {
         set_string(d, "models_binary", v, o.models_binary);
         if (o.models_binary.empty()) d.error(v, "models_binary must not be empty");
       }},
      {"loading_messages", [&](const YAML::Node& v) {
         if (auto m = read_enum(d, "loading_messages", v))
           o.loading_messages = *m == "reasoning" ? LoadingMessages::reasoning : LoadingMessages::comments;
       }},
      {"preload", [&](const YAML::Node& v) {
         o.preload_loc = d.loc(v);
         if (auto l = read_string_list(d, "preload", v, true)) o.preload = *l;
       }},
      {"default_model", [&](const YAML::Node& v) {
         o.default_model_loc = d.loc(v);
         if (auto s = read_string(d, "default_model", v)) o.default_model = *s;
       }},
  });
  user.finish();
  admin.finish();
  if (!is_loopback_host(o.listen.host) && o.api_keys.empty())
    d.warn(d.root(), "listening on " + o.listen.host + " without api_keys: anyone who can reach "
                     "this address can use the models");
}

}  // namespace detail

namespace {

using detail::Doc;

// The YAML files of a folder, sorted so that diagnostics and load order are stable. A *.yaml
// entry that is not a regular file (a dangling link, a FIFO, a folder) is skipped with a warning
// in `skipped` when given.
std::vector<fs::path> yaml_files(const fs::path& dir, std::vector<Diagnostic>* skipped = nullptr) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension();
    if (ext != ".yaml" && ext != ".yml") continue;
    std::error_code ec2;
    if (e.is_regular_file(ec2)) {
      files.push_back(e.path());
      continue;
    }
    if (!skipped) continue;
    struct stat st {};
    const bool dangling = ::stat(e.path().c_str(), &st) != 0;
    const std::string what = dangling ? "a link to nothing" : file_kind(st.st_mode);
    skipped->push_back(Diagnostic{Severity::warning, SourceLoc{display_path(e.path()), 0, 0},
                                  "skipped: " + what + ", not a regular file"});
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Loaded {
  std::vector<detail::ProfileLocs> profile_locs;
  std::vector<detail::PipelineLocs> pipeline_locs;
};

void add_error(LoadResult& r, SourceLoc at, std::string msg) {
  r.diagnostics.push_back(Diagnostic{Severity::error, std::move(at), std::move(msg)});
}

std::string where(const SourceLoc& l) {
  return l.file + (l.line > 0 ? ":" + std::to_string(l.line) + ":" + std::to_string(l.col) : "");
}

// Names and aliases must identify exactly one profile: a request names a model by either.
void check_profile_names(LoadResult& r, const Loaded& l) {
  const auto& ps = r.config.profiles;
  std::map<std::string, std::pair<std::size_t, SourceLoc>> owner;  // name/alias -> profile, where
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto [it, fresh] = owner.emplace(ps[i].name, std::pair{i, l.profile_locs[i].name});
    if (!fresh) {
      const SourceLoc first = it->second.second, second = l.profile_locs[i].name;
      add_error(r, first, "duplicate profile name '" + ps[i].name + "' (also defined at " + where(second) + ")");
      add_error(r, second, "duplicate profile name '" + ps[i].name + "' (also defined at " + where(first) + ")");
    }
  }
  for (std::size_t i = 0; i < ps.size(); ++i) {
    for (std::size_t a = 0; a < ps[i].alias.size(); ++a) {
      const std::string& name = ps[i].alias[a];
      const SourceLoc at = l.profile_locs[i].alias[a];
      const auto [it, fresh] = owner.emplace(name, std::pair{i, at});
      if (fresh) continue;
      if (it->second.first == i) {
        r.diagnostics.push_back(Diagnostic{Severity::warning, at, "alias '" + name +
                                           "' repeats a name of profile '" + ps[i].name + "'"});
        continue;
      }
      add_error(r, at, "alias '" + name + "' of profile '" + ps[i].name + "' collides with profile '" +
                           ps[it->second.first].name + "' (" + where(it->second.second) + ")");
    }
  }
}

void check_ports(LoadResult& r, const Loaded& l) {
  const auto& ps = r.config.profiles;
  std::map<int, std::size_t> used;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (!ps[i].port) continue;
    const SourceLoc at = l.profile_locs[i].port;
    if (*ps[i].port == r.config.orch.listen.port)
      add_error(r, at, "port " + std::to_string(*ps[i].port) + " of profile '" + ps[i].name +
                           "' is the orchestrator's listen port");
    const auto [it, fresh] = used.emplace(*ps[i].port, i);
    if (!fresh)
      r.diagnostics.push_back(Diagnostic{Severity::warning, at, "profiles '" + ps[it->second].name +
          "' and '" + ps[i].name + "' share port " + std::to_string(*ps[i].port) +
          "; they can never run at the same time"});
  }
}

// A profile's `gpu:` must name devices that gpu.devices lists (NVML's list is checked by the planner).
void check_gpus(LoadResult& r, const Loaded& l) {
  const auto n = static_cast<int>(r.config.orch.gpu.devices.size());
  if (n == 0) return;
  const auto& ps = r.config.profiles;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    for (const int g : ps[i].gpu) {
      if (g < n) continue;
      add_error(r, l.profile_locs[i].gpu, "profile '" + ps[i].name + "': gpu " + std::to_string(g) +
                                              " does not exist; gpu.devices lists " + std::to_string(n) +
                                              " device(s), 0 to " + std::to_string(n - 1));
      break;
    }
  }
}

void check_pipelines(LoadResult& r, const Loaded& l) {
  std::vector<std::string> known;
  for (const auto& p : r.config.profiles) {
    known.push_back(p.name);
    known.insert(known.end(), p.alias.begin(), p.alias.end());
  }
  std::map<std::string, SourceLoc> names;
  for (std::size_t i = 0; i < r.config.pipelines.size(); ++i) {
    const Pipeline& pl = r.config.pipelines[i];
    const SourceLoc at = l.pipeline_locs[i].name;
    const auto [it, fresh] = names.emplace(pl.name, at);
    if (!fresh)
      add_error(r, at, "duplicate pipeline name '" + pl.name + "' (also defined at " + where(it->second) + ")");
    for (std::size_t s = 0; s < pl.stages.size(); ++s) {
      const Stage& st = pl.stages[s];
      if (st.model.empty() || r.config.find_profile(st.model)) continue;
      add_error(r, l.pipeline_locs[i].stages[s].model, "stage '" + st.name + "' names unknown model '" +
                                                           st.model + "'" + detail::did_you_mean(st.model, known));
    }
  }
}

// preload names profiles (or aliases); a pinned profile that sets idle_unload_s gets a warning.
void check_lifecycle(LoadResult& r, const Loaded& l) {
  std::vector<std::string> known;
  for (const auto& p : r.config.profiles) known.push_back(p.name);
  for (const auto& name : r.config.orch.preload)
    if (!r.config.find_profile(name))
      add_error(r, r.config.orch.preload_loc, "preload names unknown model '" + name + "'" +
                                                  detail::did_you_mean(name, known));
  if (const auto& dm = r.config.orch.default_model; !dm.empty() && !r.config.find_profile(dm))
    add_error(r, r.config.orch.default_model_loc,
              "default_model names unknown model '" + dm + "'" + detail::did_you_mean(dm, known));
  for (std::size_t i = 0; i < r.config.profiles.size(); ++i) {
    const auto& p = r.config.profiles[i];
    if (p.pin && p.idle_unload_s && *p.idle_unload_s > 0)
      r.diagnostics.push_back(Diagnostic{Severity::warning, l.profile_locs[i].name,
                                         "idle_unload_s is ignored: profile '" + p.name + "' is pinned"});
  }
}

void load_file(LoadResult& r, Loaded& l, const fs::path& file, bool profile) {
  Doc d(file, r.diagnostics);
  if (!d.load()) return;
  if (profile) detail::parse_profile(d, r.config.profiles, l.profile_locs);
  else detail::parse_pipeline(d, r.config.pipelines, l.pipeline_locs);
}

void load_dir(LoadResult& r, Loaded& l, const fs::path& dir, bool profiles) {
  for (const auto& f : yaml_files(dir, &r.diagnostics)) load_file(r, l, f, profiles);
}

// A profile per model of models_dir, unless an explicit profile has its name (or alias).
void add_discovered(LoadResult& r, Loaded& l) {
  auto& o = r.config.orch;
  std::error_code ec;
  if (!fs::is_directory(o.models_dir, ec)) {
    add_error(r, o.models_dir_loc, "models_dir not found: " + o.models_dir.string());
    return;
  }
  std::vector<std::string> taken;
  for (const auto& p : r.config.profiles) {
    taken.push_back(p.name);
    taken.insert(taken.end(), p.alias.begin(), p.alias.end());
  }
  if (o.models_binary.empty()) o.models_binary = default_models_binary();
  const auto files = scan_models_dir(o.models_dir);
  auto found = discover(files, o.models_binary, taken);
  for (const auto& n : found.notes) r.diagnostics.push_back(Diagnostic{Severity::warning, o.models_dir_loc, n});
  // A folder whose models all have explicit profiles (what `init` writes) is not an empty folder.
  const bool any_model = std::any_of(files.begin(), files.end(), [](const GgufFacts& f) {
    return f.error.empty() && !f.is_adapter() && !f.is_projector();
  });
  if (!any_model)
    r.diagnostics.push_back(Diagnostic{Severity::warning, o.models_dir_loc, "no model (*.gguf) to serve in " +
                                                                                o.models_dir.string()});
  for (auto& p : found.profiles) {
    l.profile_locs.push_back(detail::ProfileLocs{p.loc, std::vector<SourceLoc>(p.alias.size(), p.loc), {}, {}});
    r.config.profiles.push_back(std::move(p));
  }
}

void sort_diagnostics(LoadResult& r) {
  std::stable_sort(r.diagnostics.begin(), r.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.loc.file, a.loc.line, a.loc.col) <
                            std::tie(b.loc.file, b.loc.line, b.loc.col);
                   });
}

// One profile or pipeline file on its own, with the default directories of its folder.
LoadResult load_single(const fs::path& file, bool profile) {
  LoadResult r;
  Loaded l;
  detail::default_dirs(r.config.orch, fs::absolute(file).parent_path());
  load_file(r, l, file, profile);
  check_profile_names(r, l);  // nothing to check in a pipeline file
  sort_diagnostics(r);
  return r;
}

}  // namespace

LoadResult load(const Source& source) {
  LoadResult r;
  Loaded l;
  bool pipelines_dir_set = false;
  if (source.file.empty()) {
    detail::default_dirs(r.config.orch, fs::current_path());
  } else {
    Doc d(source.file, r.diagnostics);
    if (!d.load()) return r;
    detail::parse_orchestrator(d, r.config.orch, pipelines_dir_set);
  }
  auto& o = r.config.orch;
  const SourceLoc top{o.file.empty() ? std::string("(defaults)") : display_path(o.file), 0, 0};
  if (!source.models_dir.empty()) {  // --models-dir: the command line wins over the file's key
    o.models_dir = fs::absolute(source.models_dir).lexically_normal();
    o.models_dir_loc = SourceLoc{"--models-dir", 0, 0};
  }
  const bool models = !o.models_dir.empty();
  std::error_code ec;  // non-throwing overloads: any path text must end in a diagnostic
  if (!fs::is_directory(o.profiles_dir, ec)) {
    if (!models) add_error(r, top, "profiles directory not found: " + o.profiles_dir.string());
  } else {
    load_dir(r, l, o.profiles_dir, true);
    if (yaml_files(o.profiles_dir).empty() && !models)
      r.diagnostics.push_back(Diagnostic{Severity::warning, top, "no profiles (*.yaml) in " +
                                                                     o.profiles_dir.string()});
  }
  if (models) add_discovered(r, l);
  if (fs::is_directory(o.pipelines_dir, ec)) load_dir(r, l, o.pipelines_dir, false);
  else if (pipelines_dir_set)
    add_error(r, top, "pipelines directory not found: " + o.pipelines_dir.string());
  check_profile_names(r, l);
  check_ports(r, l);
  check_gpus(r, l);
  check_pipelines(r, l);
  check_lifecycle(r, l);
  sort_diagnostics(r);
  return r;
}

LoadResult load(const fs::path& orchestrator_file) { return load(Source{orchestrator_file}); }

LoadResult load_profile_file(const fs::path& file) { return load_single(file, true); }

LoadResult load_pipeline_file(const fs::path& file) { return load_single(file, false); }

std::optional<std::string> listen_host_problem(const std::string& host) {
  in6_addr buf{};
  if (inet_pton(AF_INET, host.c_str(), &buf) == 1 || inet_pton(AF_INET6, host.c_str(), &buf) == 1) return std::nullopt;
  return "'" + host + "' is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or a numeric address of this machine; names are not looked up)";
}

}  // namespace kevlaya::config
