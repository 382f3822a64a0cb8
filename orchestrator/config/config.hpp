// Typed configuration: profiles, pipelines and the orchestrator config (kevlaya.yaml).
// Loading never throws for bad input: every problem becomes a Diagnostic with file:line:col.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::config {

namespace fs = std::filesystem;

// Where a value came from, for messages ("profiles/kev.yaml:4:6").
struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown / whole file
  int col = 0;   // 1-based
};

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  SourceLoc loc;
  std::string message;
  std::string format() const;  // "file:line:col: error: message"
};

enum class Backend { llama_server, command, remote };

struct LoraSpec {
  std::string name;
  fs::path path;  // absolute after loading
  double scale = 1.0;
};

struct HealthCfg {
  std::string path = "/health";
  int status = 200;         // the status a ready server answers on `path`
  std::string ready_line;   // backend=command: ready once an output line contains this (no HTTP probe)
  int first_probe_ms = 20;
  int interval_ms = 40;
  int probe_timeout_ms = 1000;
  // A ready child serving a request (docs/reliability.md#liveness): the answer's head within
  // first_byte_timeout_s, then no gap between chunks over chunk_timeout_s (504 past either); after
  // each hung_check_s without a byte, GET `path` must answer within probe_timeout_ms, or the child
  // is `hung`: killed and restarted.
  int first_byte_timeout_s = 600;
  int chunk_timeout_s = 120;
  int hung_check_s = 10;
  int startup_timeout_s = 300;
  int stall_timeout_s = 60;
  int check_interval_s = 5;  // backend=remote: background check period while reachable
  int backoff_max_s = 10;    // backend=remote: longest wait between checks while unreachable
};

struct StopCfg {
  double grace_s = 10.0;               // signal -> SIGKILL of the process group
  std::string signal = "TERM";         // first signal sent to the group (TERM INT QUIT HUP USR1 USR2)
  std::vector<std::string> command;    // backend=command: argv template run before the signal
  double command_timeout_s = 30.0;     // the stop command is killed after this long
};

struct RestartCfg {
  int max_restarts = 5;
  int window_s = 300;
  int backoff_initial_ms = 500;
  int backoff_max_s = 30;
  int cooldown_s = 60;  // how long a profile stays `failed` after too many restarts
};

// Where the runtime put a profile's child on the GPUs (ledger/placement.hpp). Never read from YAML:
// runtime::setup_residency fills it before any spawn. Empty `devices` = no device list is known
// (no NVML, no gpu.devices): the child's environment is left alone.
struct DevicePlacement {
  std::vector<int> devices;       // device indexes, ascending (NVML / gpu.devices order)
  std::string visible;            // CUDA_VISIBLE_DEVICES: the devices' UUIDs when NVML gave them, else indexes
  std::vector<std::int64_t> split;  // --tensor-split proportions (MiB), one per device; empty = llama.cpp's own
  int main_gpu = 0;               // --main-gpu: position in `devices` of the largest share (split only)
};

struct SlotCacheCfg {
  bool enabled = false;  // persist KV slots across switches (--slot-save-path)
  std::int64_t max_bytes = 2LL << 30;
};

// Who may take a child's place, and when (docs/supervisor.md, "Cost-aware eviction"). A protected
// child whose prompt cache is worth keeping is not evicted by one stray request while in use.
struct EvictCfg {
  bool protect = false;  // policy: protect (default: normal)
  int idle_s = 30;       // protect: a conflicting request waits until the child has been idle this long
  int max_wait_s = 60;   // protect: and never longer than this (the guard of a protected child)
};

// "protect (idle 30 s, max wait 60 s)" or "normal": how check and plan show the policy.
std::string evict_text(const EvictCfg& e);

// How a streaming call that waits (queue, switch) hears about it (docs/http.md, "Loading state in
// the chat"): SSE comments no client shows, or text the chat clients show as reasoning/thinking.
enum class LoadingMessages { comments, reasoning };

struct Profile {
  std::string name;
  SourceLoc loc;  // where the profile document starts
  Backend backend = Backend::llama_server;
  std::string binary = "llama-server";  // resolved on PATH at spawn time
  fs::path model;                       // absolute after loading; empty for remote
  std::string quant;                    // declared, e.g. "Q4_K_S"; may be empty
  int ngl = -1;                         // -1 = all layers ("all")
  int ctx = 2048;
  int parallel = 1;
  int batch = 0;                        // 0 = not passed
  std::string cache_type_k;             // empty = llama-server default (f16)
  std::string cache_type_v;
  std::optional<bool> flash_attn;       // unset = not passed
  std::vector<LoraSpec> lora;
  std::vector<std::string> alias;       // extra names requests may use
  std::vector<std::string> tags;        // free labels listed by /models (llama-server's --tags)
  std::vector<std::string> extra_args;
  std::map<std::string, std::string> env;
  std::optional<int> port;              // unset = allocated
  std::vector<std::string> command;     // backend=command: argv template (command_placeholders())
  std::optional<std::int64_t> vram_mib; // backend=command: declared GPU memory, priced by the ledger
  std::string url;                      // backend=remote: base URL (http://host[:port][/prefix])
  std::string remote_model;             // backend=remote: the model name on the remote (empty = name)
  std::string api_key;                  // backend=remote: bearer key sent to it (a secret; empty = none)
  std::string peer;                     // backend=remote: the peer it was imported from (empty = a file)
  std::optional<bool> shared_base;      // unset = allowed when qualifying
  std::vector<int> gpu;                 // `gpu:` device indexes; empty = auto (the planner chooses)
  DevicePlacement placement;            // set by the runtime from the placement plan
  std::optional<int> idle_unload_s;     // unset = the orchestrator's idle_unload_s; 0 = never
  bool pin = false;                     // kept resident beside the rotating ones (docs/lifecycle.md)
  std::optional<LoadingMessages> loading_messages;  // unset = the orchestrator's
  EvictCfg evict;
  HealthCfg health;
  StopCfg stop;
  RestartCfg restart;
  SlotCacheCfg slot_cache;
  // Made from a GGUF file of models_dir (config/models_dir.cpp), not from a YAML document:
  // ctx, ngl and parallel are chosen by the runtime to fit the budget (runtime::fit_discovered).
  bool discovered = false;
};

// One GPU as written under gpu.devices (planning without NVML, or instead of it).
struct DeviceCfg {
  std::int64_t vram_mib = 0;
  std::string name;  // shown by plan/check/status; may be empty
};

struct GpuCfg {
  std::optional<std::int64_t> vram_mib;  // unset = auto (NVML); the one-device shorthand
  std::vector<DeviceCfg> devices;        // non-empty = these devices, NVML not asked (excludes vram_mib)
  std::int64_t reserve_mib = 256;
  std::int64_t overhead_mib = 450;       // CUDA context + allocator slack per child
};

struct ListenCfg {
  std::string host = "127.0.0.1";
  int port = 8080;
};

// Why `host` cannot be listened on (it must be a numeric IPv4 or IPv6 address: the door binds it
// as given, with no name lookup), or nullopt. The one rule check (file:line:col) and serve share.
std::optional<std::string> listen_host_problem(const std::string& host);

struct QueueCfg {
  int max_depth = 512;  // waiting model calls, 429 past it (Ollama's OLLAMA_MAX_QUEUE default)
  int max_wait_s = 300;
};

// The request history (docs/http.md "Activity"): state_dir/activity.db, bounded by count and age.
struct ActivityCfg {
  bool enabled = true;
  std::int64_t max_records = 100000;
  int max_age_days = 30;
  int max_mib = 64;  // activity.db's budget: the oldest records are deleted past it
  std::vector<std::string> session_headers = {"X-Session-ID"};  // the first one present names the session
};

// Captures of request and response bodies (docs/http.md "Captures"): off by default.
struct CaptureCfg {
  bool enabled = false;
  int max_mib = 64;  // the compressed ring's size in RAM
};

enum class Residency { auto_, rotate, co_resident };

struct SchedulingCfg {
  int max_wait_before_swap_ms = 2000;  // starvation guard
  int min_residency_ms = 500;          // anti-thrash
  int drain_timeout_s = 60;
  bool switch_ahead = true;  // calls alternate strictly between two models: start the next at idle
};

struct PrefetchCfg {
  bool enabled = true;
  std::int64_t min_available_mib = 1024;  // stop prefetching under this MemAvailable
};

struct LimitsCfg {
  std::int64_t max_body_bytes = 8 << 20;
  int max_connections = 256;
  int reserved_connections = 4;  // extra slots that serve only /health and /metrics
  int header_timeout_s = 10;     // from accept / first byte to a complete request header
  int read_timeout_s = 30;
  int idle_timeout_s = 120;
  // A child's or remote's non-streamed answer is buffered up to this (to reshape it, read its
  // timings, send it with Content-Length); past it a plain answer is relayed chunked as it comes,
  // and one that must be whole (an error body, a translated API's answer) is refused with 502.
  std::int64_t max_answer_bytes = 8 << 20;
};

// Pipeline runs queued at the door (POST /v1/pipelines/{name}/runs, sync or ?async=1).
struct RunsCfg {
  int max_queued = 32;                        // runs waiting or running; 429 past it
  std::int64_t max_queued_bytes = 64LL << 20;  // their request bodies together; 429 past it
  std::int64_t max_kept_bytes = 64LL << 20;    // finished records kept for GET /v1/runs/{id}
};

// Browser requests (docs/security.md): an `Origin` is refused unless listed here (or the door's own).
// "localhost" = any loopback origin; "*" = any origin, answered as llama-server answers without
// --cors-origins (reflected, with credentials).
struct CorsCfg {
  std::vector<std::string> allowed_origins;  // "scheme://host[:port]", lower-case, or a keyword
};

// llama-server's tools for agents and web UIs (`--tools`, `--mcp-servers-config`): GET and POST
// /tools are answered by one model-less llama-server the door runs beside its children (it holds
// no model and no GPU memory; docs/http.md "Tools"). Off unless one of the three is set.
struct ToolsCfg {
  SourceLoc loc;
  std::string builtin;           // --tools: "all" or a comma list of built-in tools; empty = none
  fs::path mcp_servers;          // --mcp-servers-config: a JSON file (absolute, checked at load)
  std::string mcp_servers_json;  // --mcp-servers-json: the same JSON inline (checked at load)
  std::string binary;            // the server binary; empty = models_binary's rule
  std::vector<std::string> extra_args;  // more llama-server arguments of the tools host
  bool enabled() const { return !builtin.empty() || !mcp_servers.empty() || !mcp_servers_json.empty(); }
};

// Another kevlaya-orch door whose models are imported as remote profiles (docs/scale-out.md).
struct PeerCfg {
  SourceLoc loc;
  std::string url;      // http://host:port of its door
  std::string api_key;  // one of its api_keys (api_key, api_key_file or api_key_env); empty = none
};

struct OrchestratorCfg {
  SourceLoc loc;
  fs::path file;             // absolute path of kevlaya.yaml (empty = defaults)
  fs::path profiles_dir;     // absolute
  fs::path pipelines_dir;    // absolute
  fs::path state_dir;        // absolute
  fs::path log_dir;          // absolute
  GpuCfg gpu;
  ListenCfg listen;
  std::vector<std::string> api_keys;  // api_keys + api_keys_file + api_keys_env, merged at load
  // admin_api_keys (+ _file, _env): the only keys /admin/* and /logs accept when set; they work on
  // every other route too. Empty = api_keys decide everywhere.
  std::vector<std::string> admin_api_keys;
  std::vector<std::string> allowed_hosts;  // Host names served besides loopback (lower-case)
  CorsCfg cors;
  ToolsCfg tools;
  std::vector<PeerCfg> peers;
  RunsCfg runs;
  QueueCfg queue;
  ActivityCfg activity;
  CaptureCfg capture;
  Residency residency = Residency::auto_;
  SchedulingCfg scheduling;
  PrefetchCfg prefetch;
  LimitsCfg limits;
  // Lifecycle (docs/lifecycle.md). 600 s: a reload from the page cache costs seconds, so after
  // ten quiet minutes the GPU is worth more to the desktop than the warm child.
  int idle_unload_s = 600;     // default of every profile; 0 = never unload when idle
  int keep_alive_max_s = 3600;  // cap on a request's keep_alive (-1 = no cap; a request's -1 = the cap)
  LoadingMessages loading_messages = LoadingMessages::comments;  // default of every profile
  std::vector<std::string> preload;  // profiles started when the door starts
  SourceLoc preload_loc;
  // The profile (or alias) a model call goes to when its `model` is absent, null or unknown;
  // empty = none (with one profile, that one: Config::resolve_model).
  std::string default_model;
  SourceLoc default_model_loc;
  // A folder of GGUF files, each served as a profile (docs/configuration.md#models_dir); empty = none.
  fs::path models_dir;
  SourceLoc models_dir_loc;
  // The server binary of those profiles: $KEVLAYA_SERVER_BINARY when set, else llama-server on PATH.
  std::string models_binary;
};

struct Message {
  std::string role;     // system | user | assistant
  std::string content;  // template with {{placeholders}}
};

struct Sampling {
  double temperature = 0.1;
  std::optional<double> top_p;
  std::optional<std::int64_t> seed;
  int max_tokens = 256;
};

struct OutputConstraint {
  std::vector<std::string> choices;  // non-empty = choices constraint (GBNF)
  std::string json_schema;           // serialized JSON; non-empty = schema constraint
};

enum class StageRole { decide, verify, other };

struct Stage {
  std::string name;  // "decide", "verify", ...
  SourceLoc loc;
  StageRole role = StageRole::other;
  std::string model;  // profile name or alias
  std::vector<Message> messages;
  Sampling sampling;
  OutputConstraint output;
  std::string pass_value = "pass";  // verify: the choice / field value that means pass
  int max_invalid_retries = 2;
};

struct Pipeline {
  std::string name;
  SourceLoc loc;
  fs::path file;
  std::vector<Stage> stages;
  int max_rounds = 3;  // decide/verify rounds before `rejected`
};

// Everything loaded together; cross-references are checked across documents.
struct Config {
  OrchestratorCfg orch;
  std::vector<Profile> profiles;
  std::vector<Pipeline> pipelines;

  const Profile* find_profile(const std::string& name_or_alias) const;
  // The one resolution of a model call's `model` (every API): a profile, an alias, either with
  // Ollama's ":latest" tag; "" (absent or null) or an unknown name goes to orch.default_model, else
  // to the only profile. Errors: 400 ("" with several profiles, no default), 404 (unknown, listing
  // the known models).
  Result<const Profile*> resolve_model(std::string_view requested) const;
  // Seconds a child of `p` may stay idle before it is unloaded; 0 = never (pinned, or off).
  int idle_unload_s(const Profile& p) const;
  // How `p`'s streaming callers hear about a wait: the profile's loading_messages, else the orchestrator's.
  LoadingMessages loading_messages(const Profile& p) const;
  const Pipeline* find_pipeline(const std::string& name) const;
};

// A configuration in force, shared: every holder keeps its version alive (ledger::Snapshot).
using ConfigPtr = std::shared_ptr<const Config>;

struct LoadResult {
  Config config;
  std::vector<Diagnostic> diagnostics;  // errors and warnings, in file order
  bool ok() const;                       // no error-severity diagnostic
  std::size_t error_count() const;       // number of error-severity diagnostics
};

// What a command loads: kevlaya.yaml (empty = defaults next to cwd) and a models_dir given on
// the command line (`--models-dir`; empty = the file's models_dir key, if any).
struct Source {
  Source() = default;
  Source(fs::path f, fs::path m = {}) : file(std::move(f)), models_dir(std::move(m)) {}  // NOLINT: a path is a source
  fs::path file;
  fs::path models_dir;
};

// Loads kevlaya.yaml (or defaults when `file` is empty: profiles/ and pipelines/ next to cwd)
// plus every profile and pipeline it points to, and a profile per model of models_dir (explicit
// profiles win over discovered ones of the same name). Never throws for bad input.
LoadResult load(const Source& source);
LoadResult load(const fs::path& orchestrator_file);  // load(Source{file})

// Loads one document of each kind (used by tests and by `check` on single files).
LoadResult load_profile_file(const fs::path& file);
LoadResult load_pipeline_file(const fs::path& file);

// http://HOST[:PORT][/PATH] split up (remote profiles and peers); https is not supported.
struct HttpUrl {
  std::string host;
  int port = 80;
  std::string base_path;  // "" or "/prefix" (no trailing '/'), put before every request path
};
std::optional<HttpUrl> parse_http_url(const std::string& url, std::string* err);

// Expands ${VAR} and ${VAR:-default}; unknown ${VAR} without default -> error string in `err`.
std::string expand_env(const std::string& in, std::string* err);

// The words kevlaya-orch chooses for one spawn (owner "orchestrator" in config/flags.hpp).
struct SpawnArgs {
  std::string host = "127.0.0.1";  // bind host
  std::string port;                // as text: a number, or e.g. "PORT" for display
  std::string slot_save_path;      // empty = no --slot-save-path (slot_cache off)
  std::string api_key;             // empty = no --api-key (the per-start secret of the child)
};

// What `args` shows instead of a child's key: a fresh one is drawn at every start, never printed.
inline constexpr std::string_view kChildKeyPlaceholder = "<per-start secret>";

// Profile -> the complete child argv (pure, fixed order; the one command `args` prints and
// Child runs). Reference Kev profile:
// llama-server -m <abs> -ngl 32 -c 2048 -np 1 --host 127.0.0.1 --port P --alias kev -lv 4
std::vector<std::string> build_argv(const Profile& p, const SpawnArgs& spawn);
// Same with only host and port (no slot cache, no child key).
std::vector<std::string> build_argv(const Profile& p, const std::string& host, int port);

// The placeholders of a backend=command template ("{port}", ...), each replaced in every word.
const std::vector<std::string>& command_placeholders();
// The stop command of a backend=command profile with its placeholders filled ({pid} included).
std::vector<std::string> build_stop_argv(const Profile& p, const SpawnArgs& spawn, int pid);
// The environment words a placed child gets on top of the profile's env (CUDA_DEVICE_ORDER,
// CUDA_VISIBLE_DEVICES); empty when the placement names no device.
std::vector<std::pair<std::string, std::string>> placement_env(const DevicePlacement& p);

// One argv as a single line a POSIX shell would split back into the same words.
std::string shell_join(const std::vector<std::string>& argv);

// A path for messages: relative to the current directory when below it, else absolute.
std::string display_path(const fs::path& p);

// Names as written in YAML ("co-resident", "verify"); a backend's is backend_of(p).name (backend.hpp).
const char* to_string(Residency r);
const char* to_string(StageRole r);

// Allowed KV cache types for cache_type_k / cache_type_v (llama.cpp b10470).
inline const std::vector<std::string>& kv_cache_types() {
  static const std::vector<std::string> t = {"f32",  "f16",  "bf16", "q8_0", "q4_0",
                                             "q4_1", "iq4_nl", "q5_0", "q5_1"};
  return t;
}

}  // namespace kevlaya::config
