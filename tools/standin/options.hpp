// Command line of the stand-in: the llama-server flags the orchestrator uses (same names,
// aliases and error messages as common/arg.cpp at b10470) plus the --fake-* fault flags.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace standin {

struct LoraSpec {
  std::string path;
  float scale = 1.0f;
};

struct Options {
  // real llama-server flags
  std::string model_path;
  std::string host = "127.0.0.1";
  int port = 8080;
  int n_ctx = 0;           // 0 = n_ctx_train from the GGUF
  int n_gpu_layers = -1;   // -1 auto, -2 all (both: everything fits on the pretend GPU)
  int n_parallel = -1;     // -1 auto = 4 slots with a unified KV cache
  int n_batch = 2048;
  int n_ubatch = 512;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  std::string flash_attn = "auto";
  std::vector<std::string> aliases;  // sorted, unique (llama.cpp keeps a std::set)
  std::vector<LoraSpec> loras;
  bool lora_init_without_apply = false;
  bool metrics = false;
  bool embeddings = false;  // --embeddings: the embedding endpoints answer
  bool reranking = false;   // --reranking: the rerank endpoints answer
  std::string pooling = "none";  // --pooling: the model's default for stories260K-like models
  bool slots_endpoint = true;
  std::string slot_save_path;  // with a trailing '/' when set
  std::vector<std::string> api_keys;
  int verbosity = 3;
  bool log_disable = false;
  bool ui = true;
  bool ui_mcp_proxy = false;  // --ui-mcp-proxy: GET/POST /cors-proxy answer

  // stand-in only
  std::string responses_path;               // --responses or $STANDIN_RESPONSES
  std::optional<int> fake_load_ms;          // default: 1 ms per MiB of GGUF, min 5 ms
  int fake_token_ms = 0;                    // delay per generated token
  int fake_prefill_us_per_token = 50;       // simulated prompt cost per un-cached token
  bool fake_cuda_oom = false;
  bool fake_kv_fail = false;
  std::optional<int> fake_crash_after;      // SIGABRT on the (N+1)-th completion request
  bool fake_crash_mid_stream = false;
  bool fake_hang_health = false;
  bool fake_ignore_sigterm = false;
  std::optional<int> fake_exit_before_listen;
  int fake_rss_mib = 0;
  bool fake_bind_fail = false;

  // Model name as the API reports it: first alias, else the model path.
  std::string model_name() const { return aliases.empty() ? model_path : aliases.front(); }
};

enum class ParseOutcome { run, exit_ok, exit_error };

// Parses argv like common_params_parse: unknown flag -> "error: invalid argument: X" on stderr
// and exit_error; a bad value -> "error while handling argument ..." and exit_error.
ParseOutcome parse_options(int argc, char** argv, Options& out);

}  // namespace standin
