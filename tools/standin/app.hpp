// The stand-in's server state and routes: readiness, slots (with a pretend prompt cache),
// LoRA scales, metrics and the completion endpoints. Everything runs on the one io_context
// thread, so the state needs no locks.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "generate.hpp"
#include "http_server.hpp"
#include "model_load.hpp"
#include "options.hpp"

namespace standin {

using ojson = nlohmann::ordered_json;

struct Slot {
  int id = 0;
  bool busy = false;
  int id_task = -1;
  std::vector<std::string> cache;  // tokens of the last prompt + answer (the "KV cache")
  int n_prompt = 0;
  int n_cached = 0;
};

struct Metrics {
  std::uint64_t prompt_tokens = 0;
  std::uint64_t prompt_cached = 0;
  double prompt_s = 0;
  std::uint64_t predicted_tokens = 0;
  double predicted_s = 0;
  std::uint64_t n_decode = 0;
  std::uint64_t n_tokens_max = 0;
  int deferred = 0;
};

enum class Kind { native, oai_completion, oai_chat, anthropic, responses };

// One parsed completion request.
struct Task {
  Kind kind = Kind::native;
  bool stream = false;
  bool include_usage = false;
  std::string prompt;
  std::vector<std::string> prompt_tokens;
  int n_predict = -1;
  std::optional<std::string> grammar;
  std::optional<nlohmann::json> schema;
  std::vector<float> lora;
  std::int64_t seed = -1;
  std::string req_model;
  int id_slot = -1;
};

// An error answer: status code + llama.cpp's {"error": {...}} body.
struct ErrorReply {
  int code = 500;
  std::string message;
  std::string type = "server_error";
};

// What an API's answer is built from (apis.cpp), for the Anthropic and Responses kinds.
struct GenView {
  std::string id, model, text;
  int n_prompt = 0, n_out = 0;
  bool eos = true;
};
bool is_api_kind(Kind k);
nlohmann::json api_messages(const nlohmann::json& body, Kind kind);  // as OpenAI chat messages
ojson api_final_body(Kind kind, const GenView& g);
std::string api_token_events(Kind kind, const GenView& g, const std::string& piece, std::size_t index);
std::string api_final_events(Kind kind, const GenView& g);
std::string render_prompt(const nlohmann::json& messages);  // the chat template (ChatML)

class App {
 public:
  App(net::io_context& ioc, Options opt, Script script);
  // Marks the model as loaded: endpoints stop answering 503.
  void set_ready(LoadedModel model);
  // The single request entry point (middlewares, then routes).
  net::awaitable<void> handle(const HttpRequest& req, Responder& res);
  // Waits (bounded) for in-flight completions to finish; true when none is left.
  net::awaitable<bool> drain(std::chrono::milliseconds limit);

 private:
  // routes.cpp
  net::awaitable<void> route(const HttpRequest& req, Responder& res);
  ojson model_info_json() const;
  net::awaitable<void> get_models(Responder& res);
  net::awaitable<void> get_props(Responder& res);
  net::awaitable<void> get_slots(const HttpRequest& req, Responder& res);
  net::awaitable<void> get_metrics(Responder& res);
  net::awaitable<void> get_lora(Responder& res);
  net::awaitable<void> post_lora(const HttpRequest& req, Responder& res);
  net::awaitable<void> post_slots(const HttpRequest& req, Responder& res);
  net::awaitable<void> slot_save(Slot& slot, const std::string& filename, Responder& res);
  net::awaitable<void> slot_restore(Slot& slot, const std::string& filename, Responder& res);
  net::awaitable<void> send_error(Responder& res, const ErrorReply& e);

  // apis.cpp
  net::awaitable<bool> route_api(const HttpRequest& req, Responder& res);
  ojson tokenize_json(const nlohmann::json& body);
  std::optional<std::pair<int, std::string>> embeddings_reply(const nlohmann::json& body, bool oai,
                                                              std::optional<ErrorReply>& err);
  std::optional<std::pair<int, std::string>> rerank_reply(const nlohmann::json& body, std::optional<ErrorReply>& err);

  // completion.cpp
  net::awaitable<void> completion(const HttpRequest& req, Responder& res, Kind kind);
  std::optional<ErrorReply> parse_task(const nlohmann::json& body, Kind kind, Task& task) const;
  std::string answer_for(const Task& task);
  net::awaitable<void> run_task(Task& task, Slot& slot, Responder& res);
  net::awaitable<Slot*> acquire_slot(int id_slot, const std::vector<std::string>& prompt);
  void release_slot(Slot& slot);
  net::awaitable<void> sleep_for(std::chrono::microseconds d);

  net::io_context& ioc_;
  Options opt_;
  Script script_;
  std::optional<LoadedModel> model_;
  std::vector<Slot> slots_;
  Metrics metrics_;
  int next_task_id_ = 0;
  int completions_seen_ = 0;
  int inflight_ = 0;
  net::steady_timer slot_freed_;  // "condition variable": expires_at(max) wakes all waiters
  net::steady_timer idle_;        // same, fired when inflight_ drops to 0
  std::int64_t t_start_ = 0;
};

// {"error": {"code", "message", "type"}} as format_error_response builds it.
std::string error_json(const ErrorReply& e);

}  // namespace standin
