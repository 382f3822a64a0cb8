#include "pipeline/exec_call.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/bounded_json.hpp"
#include "common/clock.hpp"
#include "common/bytes.hpp"
#include "supervisor/child_body.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::pipeline {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::size_t kMaxBody = 16u << 20;  // a chat answer is small; anything bigger is broken

Error http_error(int status, const std::string& body, const std::string& profile) {
  const auto said = error_message(json::parse(body, nullptr, false));
  return make_error(Errc::upstream_error,
                    profile + " answered HTTP " + std::to_string(status) + ": " + said.value_or(body.substr(0, 300)));
}

// Shared-base mode: the lease's adapter scales go into the body's `lora` field (the child loads
// every adapter of its group at scale 0; this selects the profile's own). A stage that names its
// model otherwise than the child's server knows it (an alias; a remote's own name): renamed.
std::string with_lora(const std::string& body, const std::string& model, const supervisor::Lease& lease) {
  const auto& lora = lease.lora_scales();
  const std::string renamed = supervisor::child_model(model, lease.upstream_model());  // the door's rule
  if (lora.empty() && renamed.empty()) return body;
  auto j = nlohmann::ordered_json::parse(body, nullptr, false);  // the schema's property order stays
  if (j.is_discarded() || !j.is_object()) return body;
  supervisor::set_child_fields(j, renamed, lora);
  return dump_json(j);
}

struct Exchange {
  int status = 0;
  std::string body;
};

// One POST over a cancellable connection (stop() closes it), bounded as a door call is
// (Supervisor::call_options: the profile's health timeouts, a silent child probed and replaced).
asio::awaitable<Result<Exchange>> post_chat(CallEnv& env, const upstream::Endpoint& ep, std::string body,
                                            upstream::StreamOptions opt) {
  upstream::Request req;
  req.method = "POST";
  req.target = "/v1/chat/completions";
  req.body = std::move(body);
  auto ex_ptr = std::make_shared<Exchange>();
  upstream::StreamCallbacks cb;
  cb.on_head = [ex_ptr](int status, upstream::HeaderViews) {
    ex_ptr->status = status;
    return true;
  };
  cb.on_chunk = [ex_ptr](std::string_view bytes) {
    if (ex_ptr->body.size() + bytes.size() > kMaxBody) return false;
    ex_ptr->body.append(bytes);
    return true;
  };
  env.cancel = std::make_shared<upstream::CancelToken>();
  auto res = co_await upstream::stream(env.ex, ep, std::move(req), std::move(cb), opt, env.cancel);
  if (!res) co_return res.error();
  if (res->cancelled) co_return make_error(Errc::unavailable, "call abandoned: the run was interrupted");
  if (res->stopped) co_return make_error(Errc::upstream_error, "answer larger than 16 MiB from " + ep.to_string());
  if (!res->complete) co_return make_error(Errc::upstream_error, "incomplete answer from " + ep.to_string());
  co_return std::move(*ex_ptr);
}

// Parses a chat completion body (status 200) into content, finish_reason, timings and usage.
Result<CallResult> parse_chat_response(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(Errc::upstream_error, "answer is not a JSON object");
  const auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object())
    return make_error(Errc::upstream_error, "answer has no choices");
  const auto& c0 = (*choices)[0];
  CallResult r;
  const auto msg = c0.find("message");
  if (msg == c0.end() || !msg->is_object())
    return make_error(Errc::upstream_error, "answer has no message");
  if (const auto content = msg->find("content"); content != msg->end() && content->is_string())
    r.content = content->get<std::string>();
  if (const auto fr = c0.find("finish_reason"); fr != c0.end() && fr->is_string())
    r.finish_reason = fr->get<std::string>();
  if (const auto t = j.find("timings"); t != j.end() && t->is_object()) r.timings = *t;
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) r.usage = *u;
  return r;
}

// One acquire + POST. `crashed` tells the caller the failure was the child dying.
asio::awaitable<Result<CallResult>> attempt(CallEnv& env, const std::string& model, const std::string& body,
                                            bool& crashed) {
  crashed = false;
  auto lease = co_await env.sup->acquire(model);  // queue.max_wait_s: the supervisor's admission
  if (!lease) co_return lease.error();
  if (env.on_lease) env.on_lease(lease->profile());
  if (env.stopping) co_return make_error(Errc::unavailable, "call abandoned: the run was interrupted");
  const auto t0 = Clock::now();
  auto ex = co_await post_chat(env, lease->endpoint(), with_lora(body, model, *lease),
                               env.sup->call_options(*lease, env.call_timeout));
  const double call_ms = fractional_ms_since(t0);
  if (!ex) {
    if (ex.error().code == Errc::upstream_error && !env.stopping && co_await env.sup->check_alive(*lease)) {
      crashed = true;
      co_return lease->crash_error();
    }
    co_return ex.error();
  }
  if (ex->status != 200) co_return http_error(ex->status, ex->body, lease->profile());
  auto parsed = parse_chat_response(ex->body);
  if (!parsed) {
    Error e = parsed.error();
    e.message = lease->profile() + ": " + e.message;
    co_return e;
  }
  parsed->profile = lease->profile();
  parsed->queue_ms = lease->queue_ms();
  parsed->switch_ms = lease->switch_ms();
  parsed->call_ms = call_ms;
  co_return std::move(*parsed);
}

}  // namespace

asio::awaitable<Result<CallResult>> call_model(CallEnv& env, std::string model, std::string body) {
  bool crashed = false;
  auto first = co_await attempt(env, model, body, crashed);
  if (first || !crashed || env.stopping) co_return first;
  // The supervisor restarts the child on the next acquire (after its backoff); try once more.
  const std::string crash_message = first.error().message;
  spdlog::warn("{}; retrying the call once after the restart", crash_message);
  auto second = co_await attempt(env, model, body, crashed);
  if (!second) {
    Error e = second.error();
    e.message += " (after a retry; first try: " + crash_message + ")";
    co_return e;
  }
  second->crash_retried = true;
  second->crash_message = crash_message;
  co_return second;
}

}  // namespace kevlaya::pipeline
