#include "options.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "gguf/gguf.hpp"

namespace standin {
namespace {

// One flag: its spellings, a value hint (empty for switches) and what it does.
struct Flag {
  std::vector<std::string> names;
  std::string hint;
  std::string help;
  std::function<void(Options&, const std::string&)> apply;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string strip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

int to_int(const std::string& v) { return std::stoi(v); }  // throws "stoi" like arg.cpp

bool is_truthy(const std::string& v) { return v == "on" || v == "enabled" || v == "true" || v == "1"; }
bool is_falsey(const std::string& v) { return v == "off" || v == "disabled" || v == "false" || v == "0"; }

std::string cache_type(const std::string& v) {
  if (!kevlaya::gguf::cache_type_from_name(v)) throw std::runtime_error("Unsupported cache type: " + v);
  return v;
}

bool is_directory(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void add_aliases(Options& o, const std::string& v) {
  std::set<std::string> all(o.aliases.begin(), o.aliases.end());
  for (const auto& a : split(v, ',')) {
    if (!strip(a).empty()) all.insert(strip(a));
  }
  o.aliases.assign(all.begin(), all.end());
}

void add_lora_scaled(Options& o, const std::string& v) {
  for (const auto& item : split(v, ',')) {
    const auto parts = split(item, ':');
    if (parts.size() != 2) throw std::invalid_argument("lora-scaled format: FNAME:SCALE");
    o.loras.push_back({parts[0], std::stof(parts[1])});
  }
}

// The real flags the stand-in implements.
std::vector<Flag> real_flags() {
  using O = Options;
  using S = const std::string&;
  return {
      {{"-m", "--model"}, "FNAME", "model path to load", [](O& o, S v) { o.model_path = v; }},
      {{"--host"}, "HOST", "ip address to listen", [](O& o, S v) { o.host = v; }},
      {{"--port"}, "PORT", "port to listen (0 = any free port)", [](O& o, S v) { o.port = to_int(v); }},
      {{"-c", "--ctx-size"}, "N", "size of the prompt context (0 = loaded from model)",
       [](O& o, S v) { o.n_ctx = to_int(v); }},
      {{"-ngl", "--gpu-layers", "--n-gpu-layers"}, "N", "max. number of layers to store in VRAM",
       [](O& o, S v) { o.n_gpu_layers = v == "auto" ? -1 : v == "all" ? -2 : to_int(v); }},
      {{"-np", "--parallel"}, "N", "number of server slots (-1 = auto)",
       [](O& o, S v) {
         if (to_int(v) == 0) throw std::invalid_argument("error: invalid value for n_parallel\n");
         o.n_parallel = to_int(v);
       }},
      {{"-b", "--batch-size"}, "N", "logical maximum batch size", [](O& o, S v) { o.n_batch = to_int(v); }},
      {{"-ub", "--ubatch-size"}, "N", "physical maximum batch size", [](O& o, S v) { o.n_ubatch = to_int(v); }},
      {{"-ctk", "--cache-type-k"}, "TYPE", "KV cache data type for K", [](O& o, S v) { o.cache_type_k = cache_type(v); }},
      {{"-ctv", "--cache-type-v"}, "TYPE", "KV cache data type for V", [](O& o, S v) { o.cache_type_v = cache_type(v); }},
      {{"-fa", "--flash-attn"}, "[on|off|auto]", "set Flash Attention use",
       [](O& o, S v) {
         if (!is_truthy(v) && !is_falsey(v) && v != "auto")
           throw std::runtime_error("error: unknown value for --flash-attn: '" + v + "'\n");
         o.flash_attn = is_truthy(v) ? "on" : is_falsey(v) ? "off" : "auto";
       }},
      {{"-a", "--alias"}, "STRING", "set model name aliases, comma-separated", add_aliases},
      {{"--lora"}, "FNAME", "path to LoRA adapter (comma-separated values for several)",
       [](O& o, S v) { for (const auto& p : split(v, ',')) o.loras.push_back({p, 1.0f}); }},
      {{"--lora-scaled"}, "FNAME:SCALE,...", "path to LoRA adapter with user defined scaling", add_lora_scaled},
      {{"--lora-init-without-apply"}, "", "load LoRA adapters without applying them",
       [](O& o, S) { o.lora_init_without_apply = true; }},
      {{"--embedding", "--embeddings"}, "", "restrict to only support embedding use case",
       [](O& o, S) { o.embeddings = true; }},
      {{"--reranking", "--rerank"}, "", "enable reranking endpoint on server",
       [](O& o, S) { o.embeddings = o.reranking = true; o.pooling = "rank"; }},
      {{"--pooling"}, "{none,mean,cls,last,rank}", "pooling type for embeddings",
       [](O& o, S v) {
         if (v != "none" && v != "mean" && v != "cls" && v != "last" && v != "rank")
           throw std::invalid_argument("invalid value");
         o.pooling = v;
       }},
      {{"--metrics"}, "", "enable prometheus compatible metrics endpoint", [](O& o, S) { o.metrics = true; }},
      {{"--slots"}, "", "expose slots monitoring endpoint", [](O& o, S) { o.slots_endpoint = true; }},
      {{"--no-slots"}, "", "hide slots monitoring endpoint", [](O& o, S) { o.slots_endpoint = false; }},
      {{"--slot-save-path"}, "PATH", "path to save slot kv cache",
       [](O& o, S v) {
         if (!is_directory(v)) throw std::invalid_argument("not a directory: " + v);
         o.slot_save_path = v.back() == '/' ? v : v + "/";
       }},
      {{"--api-key"}, "KEY", "API key to use for authentication (comma-separated)",
       [](O& o, S v) { for (const auto& k : split(v, ',')) if (!k.empty()) o.api_keys.push_back(k); }},
      {{"-lv", "--verbosity", "--log-verbosity"}, "N", "set the verbosity threshold",
       [](O& o, S v) { o.verbosity = to_int(v); }},
      {{"-v", "--verbose", "--log-verbose"}, "", "log everything", [](O& o, S) { o.verbosity = 1 << 20; }},
      {{"--log-disable"}, "", "log disable", [](O& o, S) { o.log_disable = true; }},
      {{"--ui", "--webui"}, "", "enable the Web UI", [](O& o, S) { o.ui = true; }},
      {{"--ui-mcp-proxy", "--webui-mcp-proxy"}, "", "experimental: enable MCP CORS proxy",
       [](O& o, S) { o.ui_mcp_proxy = true; }},
      {{"--no-ui-mcp-proxy", "--no-webui-mcp-proxy"}, "", "disable the MCP CORS proxy",
       [](O& o, S) { o.ui_mcp_proxy = false; }},
      {{"--no-ui", "--no-webui"}, "", "disable the Web UI", [](O& o, S) { o.ui = false; }},
  };
}

// Real flags accepted for compatibility and otherwise ignored.
std::vector<Flag> ignored_flags() {
  const auto none = [](Options&, const std::string&) {};
  std::vector<Flag> out;
  for (const char* n : {"-t", "--threads", "-tb", "--threads-batch", "--threads-http", "-to", "--timeout",
                        "-s", "--seed", "-n", "--predict", "--n-predict", "--temp", "--temperature",
                        "--chat-template", "--reasoning-format", "--reasoning-budget", "-sm", "--split-mode",
                        "-ts", "--tensor-split", "-mg", "--main-gpu", "-fit", "--fit", "--log-colors",
                        "--cache-reuse", "--top-k", "--top-p", "--min-p", "--numa", "--keep", "-dev", "--device",
                        "--mmproj", "--log-file"}) {
    out.push_back({{n}, "X", "accepted and ignored by the stand-in", none});
  }
  for (const char* n : {"--jinja", "--no-jinja", "--no-mmap", "--mmap", "--mlock", "-cb", "--cont-batching",
                        "-nocb", "--no-cont-batching", "--no-warmup", "-kvu", "--kv-unified", "--log-prefix",
                        "--log-timestamps", "--no-context-shift", "--context-shift", "--props", "--no-op-offload"}) {
    out.push_back({{n}, "", "accepted and ignored by the stand-in", none});
  }
  return out;
}

std::optional<int> opt_int(const std::string& v) { return to_int(v); }

std::vector<Flag> fake_flags() {
  using O = Options;
  using S = const std::string&;
  return {
      {{"--responses"}, "FILE", "scripted replies (JSON rules)", [](O& o, S v) { o.responses_path = v; }},
      {{"--fake-load-ms"}, "N", "model load duration", [](O& o, S v) { o.fake_load_ms = opt_int(v); }},
      {{"--fake-token-ms"}, "N", "delay per generated token", [](O& o, S v) { o.fake_token_ms = to_int(v); }},
      {{"--fake-prefill-us-per-token"}, "N", "simulated prompt cost per un-cached token",
       [](O& o, S v) { o.fake_prefill_us_per_token = to_int(v); }},
      {{"--fake-cuda-oom"}, "", "fail the model load with a CUDA OOM", [](O& o, S) { o.fake_cuda_oom = true; }},
      {{"--fake-kv-fail"}, "", "fail the KV cache allocation", [](O& o, S) { o.fake_kv_fail = true; }},
      {{"--fake-crash-after"}, "N", "SIGABRT on the (N+1)-th completion request",
       [](O& o, S v) { o.fake_crash_after = opt_int(v); }},
      {{"--fake-crash-mid-stream"}, "", "abort after sending some chunks", [](O& o, S) { o.fake_crash_mid_stream = true; }},
      {{"--fake-hang-health"}, "", "never answer /health", [](O& o, S) { o.fake_hang_health = true; }},
      {{"--fake-ignore-sigterm"}, "", "ignore SIGTERM", [](O& o, S) { o.fake_ignore_sigterm = true; }},
      {{"--fake-exit-before-listen"}, "N", "exit with code N before binding",
       [](O& o, S v) { o.fake_exit_before_listen = opt_int(v); }},
      {{"--fake-rss-mib"}, "N", "allocate and touch N MiB", [](O& o, S v) { o.fake_rss_mib = to_int(v); }},
      {{"--fake-bind-fail"}, "", "fail to bind the HTTP socket", [](O& o, S) { o.fake_bind_fail = true; }},
  };
}

std::string usage_line(const Flag& f) {
  std::string names;
  for (const auto& n : f.names) names += (names.empty() ? "" : ", ") + n;
  if (!f.hint.empty()) names += " " + f.hint;
  if (names.size() < 40) names.resize(40, ' ');
  return names + " " + f.help;
}

void print_usage(const std::vector<Flag>& flags) {
  std::string text = "llama-server stand-in (kevlaya test double of llama.cpp b10470)\n\n";
  for (const auto& f : flags) text += usage_line(f) + "\n";
  std::fputs(text.c_str(), stdout);
}

}  // namespace

ParseOutcome parse_options(int argc, char** argv, Options& out) {
  std::vector<Flag> flags = real_flags();
  for (auto* extra : {&ignored_flags, &fake_flags}) {
    auto more = (*extra)();
    flags.insert(flags.end(), more.begin(), more.end());
  }
  if (const char* env = std::getenv("STANDIN_RESPONSES")) out.responses_path = env;

  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) std::replace(arg.begin(), arg.end(), '_', '-');
    if (arg == "-h" || arg == "--help" || arg == "--usage") {
      print_usage(flags);
      return ParseOutcome::exit_ok;
    }
    if (arg == "--version") {
      std::fprintf(stderr, "version: 10470 (standin)\nbuilt with kevlaya for stand-in use\n");
      return ParseOutcome::exit_ok;
    }
    const auto it = std::find_if(flags.begin(), flags.end(), [&](const Flag& f) {
      return std::find(f.names.begin(), f.names.end(), arg) != f.names.end();
    });
    if (it == flags.end()) {
      std::fprintf(stderr, "error: invalid argument: %s\n", arg.c_str());
      return ParseOutcome::exit_error;
    }
    try {
      std::string value;
      if (!it->hint.empty()) {
        if (i + 1 >= argc) throw std::invalid_argument("expected value for argument");
        value = argv[++i];
      }
      it->apply(out, value);
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "error while handling argument \"%s\": %s\n\nusage:\n%s\n\nto show complete usage, run with -h\n",
                   arg.c_str(), e.what(), usage_line(*it).c_str());
      return ParseOutcome::exit_error;
    }
  }
  return ParseOutcome::run;
}

}  // namespace standin
