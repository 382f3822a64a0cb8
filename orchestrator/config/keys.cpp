// The key table (config/keys.hpp): names, types and ranges of every configuration key. Ranges
// here are the ones `check` enforces; change a range here and both the checker and the schema move.
#include "config/keys.hpp"

#include <algorithm>

#include "config/config.hpp"

namespace kevlaya::config {

namespace {

using T = KeyType;
constexpr std::int64_t kBig = INT64_MAX;
constexpr std::int64_t kDay = 86400;
constexpr std::int64_t kYear = 365 * kDay;
constexpr std::int64_t kMaxPort = 65535;
constexpr std::int64_t kMaxCount = 1 << 20;

Key k(std::string name, T type) { return Key{std::move(name), type, 0, 0, 0, 0, {}, false, false, {}}; }
Key integer(std::string name, std::int64_t lo, std::int64_t hi, std::vector<std::string> words = {}) {
  Key x = k(std::move(name), T::integer);
  x.lo = lo;
  x.hi = hi;
  x.words = std::move(words);
  return x;
}
Key number(std::string name, double lo, double hi) {
  Key x = k(std::move(name), T::number);
  x.flo = lo;
  x.fhi = hi;
  return x;
}
Key word(std::string name, std::vector<std::string> words) {
  Key x = k(std::move(name), T::word);
  x.words = std::move(words);
  return x;
}
Key object(std::string name, std::vector<Key> children, T type = T::object) {
  Key x = k(std::move(name), type);
  x.children = std::move(children);
  return x;
}
Key objects(std::string name, std::vector<Key> children) { return object(std::move(name), std::move(children), T::objects); }
Key required(Key x) {
  x.required = true;
  return x;
}

// NAME, NAME_file, NAME_env: the door's key lists (config/door.cpp).
void door_keys(std::vector<Key>& out, const std::string& name) {
  out.push_back(k(name, T::strings));
  out.push_back(k(name + "_file", T::path));
  out.push_back(k(name + "_env", T::string));
}

Key orchestrator_table() {
  std::vector<Key> c = {
      k("profiles_dir", T::path), k("pipelines_dir", T::path), k("state_dir", T::path), k("log_dir", T::path),
      k("models_dir", T::path), k("models_binary", T::string),
      object("gpu", {objects("devices", {required(integer("vram_mib", 1, kBig)), k("name", T::string)}),
                     integer("vram_mib", 1, kBig, {"auto"}), integer("reserve_mib", 0, kBig),
                     integer("overhead_mib", 0, kBig)}),
      object("listen", {k("host", T::string), integer("port", 1, kMaxPort)}),
  };
  door_keys(c, "api_keys");
  door_keys(c, "admin_api_keys");
  const std::vector<Key> more = {
      k("allowed_hosts", T::strings),
      object("cors", {k("allowed_origins", T::strings)}),
      object("tools", {k("builtin", T::string), k("mcp_servers", T::path), k("mcp_servers_json", T::string),
                       k("binary", T::string), k("extra_args", T::strings)}),
      objects("peers", {required(k("url", T::string)), k("api_key", T::string), k("api_key_file", T::path)}),
      object("runs", {integer("max_queued", 1, kMaxCount), integer("max_queued_bytes", 1, kBig),
                      integer("max_kept_bytes", 0, kBig)}),
      object("queue", {integer("max_depth", 1, kMaxCount), integer("max_wait_s", 1, kDay)}),
      word("residency", {"auto", "rotate", "co-resident"}),
      object("scheduling", {integer("max_wait_before_swap_ms", 0, 3600000), integer("min_residency_ms", 0, 3600000),
                            integer("drain_timeout_s", 0, kDay), k("switch_ahead", T::boolean)}),
      object("prefetch", {k("enabled", T::boolean), integer("min_available_mib", 0, kBig)}),
      object("activity", {k("enabled", T::boolean), integer("max_records", 1, kBig), integer("max_age_days", 0, 36500),
                          integer("max_mib", 1, 65536), k("session_headers", T::strings)}),
      object("capture", {k("enabled", T::boolean), integer("max_mib", 1, 65536)}),
      object("limits", {integer("max_body_bytes", 1, kBig), integer("max_connections", 1, kMaxCount),
                        integer("reserved_connections", 0, kMaxCount), integer("header_timeout_s", 1, kDay),
                        integer("read_timeout_s", 1, kDay), integer("idle_timeout_s", 1, kDay),
                        integer("max_answer_bytes", 1024, kBig)}),
      integer("idle_unload_s", 0, kYear),
      integer("keep_alive_max_s", -1, kYear),
      word("loading_messages", {"comments", "reasoning"}),
      k("preload", T::strings_or_string),
      k("default_model", T::string),
  };
  c.insert(c.end(), more.begin(), more.end());
  return object("orchestrator config", std::move(c));
}

const std::vector<std::string>& stop_signals() {
  static const std::vector<std::string> n = {"TERM", "INT", "QUIT", "HUP", "USR1", "USR2"};
  return n;
}

Key profile_table() {
  Key gpu = integer("gpu", 0, 63, {"auto"});
  gpu.int_list = true;
  return object("profile", {
      k("name", T::string),
      word("backend", {"llama-server", "command", "remote"}),
      k("binary", T::string),
      k("model", T::path),
      k("quant", T::string),
      integer("ngl", 0, 100000, {"all"}),
      integer("ctx", 256, kMaxCount),
      integer("parallel", 1, 256),
      integer("batch", 1, kMaxCount),
      word("cache_type_k", kv_cache_types()),
      word("cache_type_v", kv_cache_types()),
      k("flash_attn", T::boolean),
      objects("lora", {k("name", T::string), required(k("path", T::path)), number("scale", -100, 100)}),
      k("alias", T::strings_or_string),
      k("tags", T::strings_or_string),
      k("extra_args", T::strings),
      k("env", T::string_map),
      integer("port", 1, kMaxPort),
      k("command", T::strings),
      integer("vram_mib", 0, 16LL << 20),  // 16 TiB: a typo guard, not a GPU model
      k("url", T::string),
      k("api_key", T::string),
      k("api_key_file", T::path),
      object("health", {integer("status", 100, 599), k("ready_line", T::string),
                        integer("check_interval_s", 1, 3600), integer("backoff_max_s", 1, 3600),
                        k("path", T::string), integer("first_probe_ms", 1, 60000), integer("interval_ms", 1, 60000),
                        integer("probe_timeout_ms", 1, 600000), integer("first_byte_timeout_s", 1, kDay),
                        integer("chunk_timeout_s", 1, kDay), integer("hung_check_s", 1, kDay),
                        integer("startup_timeout_s", 1, kDay),
                        integer("stall_timeout_s", 1, kDay)}),
      object("stop", {number("grace_s", 0, 3600), word("signal", stop_signals()), k("command", T::strings),
                      number("timeout_s", 0.1, 3600)}),
      object("restart", {integer("max_restarts", 0, 1000), integer("window_s", 1, kDay),
                         integer("backoff_initial_ms", 0, 3600000), integer("backoff_max_s", 0, kDay),
                         integer("cooldown_s", 0, kDay)}),
      k("shared_base", T::boolean),
      gpu,
      integer("idle_unload_s", 0, kYear),
      k("pin", T::boolean),
      word("loading_messages", {"comments", "reasoning"}),
      object("evict", {word("policy", {"normal", "protect"}), integer("idle_s", 0, kDay), integer("max_wait_s", 1, kDay)}),
      object("slot_cache", {k("enabled", T::boolean), integer("max_bytes", 0, kBig)}),
  });
}

Key pipeline_table() {
  return object("pipeline", {
      k("name", T::string),
      integer("max_rounds", 1, 100),
      required(objects("stages", {
          required(k("name", T::string)),
          word("role", {"decide", "verify", "other"}),
          required(k("model", T::string)),
          objects("messages", {required(word("role", {"system", "user", "assistant"})),
                               required(k("content", T::string))}),
          k("system", T::string),
          k("user", T::string),
          object("sampling", {number("temperature", 0, 5), number("top_p", 0, 1),
                              integer("seed", INT64_MIN, kBig), integer("max_tokens", 1, kMaxCount)}),
          object("output", {k("choices", T::strings), k("json_schema", T::schema)}),
          k("pass_value", T::string),
          integer("max_invalid_retries", 0, 100),
      })),
  });
}

}  // namespace

const Key* Key::child(std::string_view n) const {
  const auto it = std::find_if(children.begin(), children.end(), [&](const Key& c) { return c.name == n; });
  return it == children.end() ? nullptr : &*it;
}

const Key& key_table(DocKind kind) {
  static const Key orch = orchestrator_table(), profile = profile_table(), pipeline = pipeline_table();
  return kind == DocKind::orchestrator ? orch : kind == DocKind::profile ? profile : pipeline;
}

const Key* find_key(DocKind kind, std::string_view path) {
  const Key* at = &key_table(kind);
  if (path.empty() || path == at->name) return at;
  while (!path.empty() && at) {
    const auto dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    part = part.substr(0, part.find('['));  // "stages[2]" -> "stages"
    at = at->child(part);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return at;
}

std::string_view kind_name(DocKind kind) {
  return kind == DocKind::orchestrator ? "orchestrator" : kind == DocKind::profile ? "profile" : "pipeline";
}

}  // namespace kevlaya::config
