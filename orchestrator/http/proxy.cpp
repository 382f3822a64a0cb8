// Model calls (every row of apis.cpp's table, and /upstream/{model}/{path}): find `model` (body,
// query or path), acquire a lease (the supervisor admits: queue depth, max wait; keep-alives in the
// API's own form while a swap is in progress), forward to the child and relay its answer chunk by
// chunk. Errors leave in the caller's API shape (apis.hpp).
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include <cmath>

#include "common/bounded_json.hpp"
#include "common/clock.hpp"
#include "http/apis.hpp"
#include "http/bodies.hpp"
#include "http/detail.hpp"
#include "http/ollama.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;
using supervisor::Lease;

constexpr std::size_t kTailBytes = 64 * 1024;  // end of a stream kept to read its `timings`
constexpr const char* kUnknownModel = "(unknown)";  // metrics label: never echo user input

using Call = ProxyCall;

// Counts a model request in the door queue until it holds a lease (or gives up).
class Waiting {
 public:
  explicit Waiting(Door& d) : d_(d) { ++d_.waiting; }
  ~Waiting() { done(); }
  void done() {
    if (active_) --d_.waiting;
    active_ = false;
  }

 private:
  Door& d_;
  bool active_ = true;
};

std::string_view query_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

// /upstream/{model}/{path}?{query}: the model from the path, everything else as sent.
Result<Call> parse_upstream(const Door& d, const Request& req, std::string_view arg) {
  Call call;
  const auto slash = arg.find('/');
  call.requested = std::string(arg.substr(0, slash));
  auto profile = resolve_model(*d.cfg, call.requested);
  if (!profile) return profile.error();
  call.profile = std::move(profile.value());
  call.raw = true;
  call.method = req.method() == bhttp::verb::get ? "GET" : "POST";
  const std::string_view target(req.target().data(), req.target().size());
  call.target = "/" + std::string(slash == std::string_view::npos ? "" : arg.substr(slash + 1));
  if (const auto q = query_of(target); !q.empty()) call.target += "?" + std::string(q);
  if (!req.body().empty()) {  // a JSON body asking for a stream gets keep-alives while it waits
    if (auto j = parse_json_bounded(req.body()); j && j->is_object())
      call.stream = j->value("stream", false) == true;
  }
  return call;
}

Result<Call> parse_call(const Door& d, const Request& req, const RouteMatch& m) {
  if (m.route == Route::upstream) return parse_upstream(d, req, m.arg);
  const std::string_view target(req.target().data(), req.target().size());
  Call call;
  call.shape = m.api->shape;
  if (m.api->from == ModelFrom::query) {  // GET /props?model=, /slots?model=
    call.requested = query_param(query_of(target), "model");
    auto profile = resolve_model(*d.cfg, call.requested);
    if (!profile) return profile.error();
    call.profile = std::move(profile.value());
    call.method = "GET";
    call.raw = true;
    call.target = std::string(target);
    return call;
  }
  auto parsed = parse_model_call(*d.cfg, req.body());
  if (!parsed) return parsed.error();
  static_cast<ModelCall&>(call) = std::move(parsed.value());
  call.target = std::string(target.substr(0, target.find('?')));
  return call;
}

std::string forward_body(const Call& call, const Request& req, const Lease& lease) {
  const std::string& sent = call.body_text ? *call.body_text : req.body();
  if (call.raw) return sent;
  return child_body(call, sent, lease.upstream_model(), lease.lora_scales());
}

HeaderList model_headers(const std::string& model, std::int64_t queue_ms, std::int64_t swap_ms) {
  return {{"X-Kevlaya-Model", model},
          {"X-Kevlaya-Queue-Ms", std::to_string(queue_ms)},
          {"X-Kevlaya-Swap-Ms", std::to_string(swap_ms)}};
}

// A lease's headers: the model figures, and for a remote profile where the call went.
HeaderList lease_headers(const Lease& lease, std::int64_t queue_ms) {
  HeaderList h = model_headers(lease.profile(), queue_ms, lease.switch_ms());
  if (lease.remote()) {
    h.emplace_back("X-Kevlaya-Backend", "remote");
    h.emplace_back("X-Kevlaya-Remote", lease.endpoint().to_string() + lease.endpoint().base_path);
  }
  return h;
}

HeaderList sse_headers(HeaderList h) {
  h.emplace_back("Cache-Control", "no-cache");
  h.emplace_back("X-Accel-Buffering", "no");  // nginx & co.: do not buffer SSE
  return h;
}

void count(Door& d, const std::string& model, int status, Clock::time_point t0) {
  const std::string m = model.empty() ? kUnknownModel : model;
  d.metrics.inc("kevlaya_requests_total", {{"model", m}, {"status", std::to_string(status)}});
  d.metrics.observe("kevlaya_request_duration_seconds", {{"model", m}},
                    std::chrono::duration<double>(Clock::now() - t0).count());
}

// Records the child's reported speeds; returns the generation speed (tokens/s), -1 when none.
double note_timings(Door& d, const std::string& model, const std::optional<Timings>& t) {
  if (!t) return -1;
  if (t->predicted_per_second > 0)
    d.metrics.observe("kevlaya_generation_tokens_per_second", {{"model", model}}, *t->predicted_per_second);
  if (t->prompt_per_second > 0)
    d.metrics.observe("kevlaya_prompt_tokens_per_second", {{"model", model}}, *t->prompt_per_second);
  return t->predicted_per_second.value_or(-1);
}

// An error for a model call, in the caller's API shape: a JSON error response, or an error event
// when the stream's 200 head is already out.
asio::awaitable<void> fail(Door& d, Connection& c, const std::string& model, ApiShape shape, Reply r,
                           Clock::time_point t0) {
  count(d, model, r.status, t0);
  if (c.head_sent()) {
    co_await c.chunk(error_event(shape, r.status, json::parse(r.body, nullptr, false)));
    co_await c.finish_stream();
    co_return;
  }
  r = reshape_error(std::move(r), shape);
  for (auto& h : model_headers(model, ms_since(t0), 0)) r.headers.push_back(h);
  co_await c.send(std::move(r));
}

// The child answered 404 for a route the door forwards: its llama-server build lacks it.
Reply missing_route_reply(const Call& call, const std::string& body) {
  const auto j = parse_json_bounded(body);
  std::string said = body.substr(0, 200);
  if (j && j->is_object() && j->contains("error") && j.value()["error"].is_object())
    said = j.value()["error"].value("message", said);
  return error_reply(make_error(Errc::not_found,
                                "model '" + call.profile + "' is served by a llama-server that has no " +
                                    call.method + " " + call.target.substr(0, call.target.find('?')) +
                                    " (it answered 404: " + said + ")",
                                "use a newer llama-server build for this profile (docs/http.md lists "
                                "which builds lack which endpoints)"));
}

// From the supervisor's event stream (Door::phases): no polling.
bool swap_in_progress(const Door& d) {
  using supervisor::Phase;
  for (const auto& [child, phase] : d.phases)
    if (phase == Phase::starting || phase == Phase::draining || phase == Phase::stopping) return true;
  return false;
}

struct PendingLease {
  explicit PendingLease(Strand s) : timer(std::move(s)) {}
  std::optional<Result<Lease>> result;
  asio::steady_timer timer;  // cancelled when `result` is set
};

// loading_messages: reasoning (docs/http.md, "Loading state in the chat"): what the wait is for,
// from the supervisor's status ("" when the call is about to be served).
std::string wait_text(const Door& d, const supervisor::Snapshot& snap, const std::string& model) {
  for (const auto& p : snap.profiles) {
    if (p.name != model) continue;
    if (p.state == supervisor::Phase::starting) {
      std::string t = "loading " + model;
      if (p.load_progress) {
        const auto& lp = *p.load_progress;
        if (!lp.stage.empty() && lp.stage != "starting") t += ": " + lp.stage;
        if (lp.pct) t += (lp.stage.empty() || lp.stage == "starting" ? ": " : ", ") + std::to_string(static_cast<int>(*lp.pct)) + " %";
      }
      if (const auto left = load_eta_s(d, p.name)) t += ", about " + std::to_string(static_cast<int>(std::ceil(*left))) + " s left";
      return t;
    }
    if (p.queued > 0) return "waiting for " + model + ": " + std::to_string(p.queued) + " in the queue";
  }
  return {};
}

// The chat-visible form of a wait for this call (OpenAI chat: reasoning_content; Ollama: thinking),
// or "" when its API has none (then SSE comments, as with loading_messages: comments).
std::string wait_event(const Door& d, const Call& call, const std::string& text) {
  const auto* prof = d.cfg->find_profile(call.profile);
  if (!prof || d.cfg->loading_messages(*prof) != config::LoadingMessages::reasoning || text.empty()) return {};
  if (call.wait_map) return call.wait_map(text);
  if (call.shape == ApiShape::openai && call.target.rfind("/v1/chat/completions", 0) == 0)
    return reasoning_event(call.profile, text);
  return {};
}

// acquire() for a streaming client: while it waits on a swap, sends the 200 SSE head and an SSE
// comment every keepalive_interval so the client (and proxies) keep the connection open; with
// loading_messages: reasoning, what it waits for (queue, load progress) as text the chat shows,
// once per change.
asio::awaitable<Result<Lease>> acquire_streaming(Door& d, Connection& c, const Call& call,
                                                 std::shared_ptr<upstream::CancelToken> cancel) {
  auto p = std::make_shared<PendingLease>(d.strand);
  auto task = [&sup = d.sup, p, model = call.profile, cancel]() -> asio::awaitable<void> {
    auto r = co_await sup.acquire(model, std::nullopt, cancel);
    p->result.emplace(std::move(r));
    p->timer.cancel();
  };
  asio::co_spawn(d.strand, std::move(task), [p](std::exception_ptr e) {
    if (e && !p->result) p->result.emplace(make_error(Errc::internal, "acquire failed unexpectedly"));
    p->timer.cancel();
  });
  const std::string comment = keepalive_event(call.shape, call.profile);
  std::string said;  // the last wait text sent
  while (!p->result) {
    boost::system::error_code ec;
    p->timer.expires_after(d.opt.keepalive_interval);
    co_await p->timer.async_wait(ec_token(ec));
    if (p->result) continue;
    std::string event;
    if (const auto* prof = d.cfg->find_profile(call.profile);
        prof && d.cfg->loading_messages(*prof) == config::LoadingMessages::reasoning) {
      const auto snap = co_await d.sup.snapshot();
      if (p->result) continue;
      const auto text = wait_text(d, snap, call.profile);
      if (text != said) event = wait_event(d, call, text);
      if (!event.empty()) said = text;
    }
    if (event.empty() && (comment.empty() || !swap_in_progress(d))) continue;
    if (event.empty()) event = comment;
    if (!c.head_sent()) {
      auto h = sse_headers({{"X-Kevlaya-Model", call.profile},
                            {"Trailer", "X-Kevlaya-Queue-Ms, X-Kevlaya-Swap-Ms"}});
      std::string ctype = "text/event-stream";  // (no ?: of strings in a coroutine: GCC 12)
      if (call.stream_map) ctype = call.stream_type;
      if (!co_await c.start_stream(200, std::move(ctype), std::move(h))) break;
    }
    if (!co_await c.chunk(event)) break;
  }
  // A client that left stops waiting here and leaves the supervisor's queue (no load for nobody);
  // a lease granted meanwhile is dropped with `p`.
  if (!p->result) {
    cancel->cancel();
    co_return make_error(Errc::unavailable, "client disconnected while waiting");
  }
  co_return std::move(*p->result);
}

// What the relay learnt from the child.
struct Relay {
  int status = 0;
  bool streaming = false;       // relayed chunk by chunk (asked for, or the child sent SSE)
  bool upstream_error = false;  // non-200: body collected for pass-through
  bool client_gone = false;
  std::string content_type;
  std::string body;  // whole body (non-streaming or error)
  std::string tail;  // streaming: last bytes, for timings
};

upstream::StreamCallbacks relay_callbacks(Connection& c, const Call& call, const Lease& lease,
                                          std::int64_t queue_ms, Relay& r) {
  upstream::StreamCallbacks cb;
  cb.on_head = [&c, &call, &lease, &r, queue_ms](int status,
                                                 const upstream::Headers& h) -> asio::awaitable<bool> {
    r.status = status;
    for (const auto& [k, v] : h)
      if (beast::iequals(k, "content-type")) r.content_type = v;
    if (status != 200) r.upstream_error = true;
    r.streaming = !r.upstream_error && (call.stream || r.content_type.rfind("text/event-stream", 0) == 0);
    if (!r.streaming) co_return true;
    const auto mh = lease_headers(lease, queue_ms);
    if (c.head_sent() && call.stream_map) co_return true;  // NDJSON has no comments: the trailers say it
    if (c.head_sent())  // the head went out with keep-alives; the figures follow as a comment
      co_return co_await c.chunk(": kevlaya queue_ms=" + std::to_string(queue_ms) +
                                 " swap_ms=" + std::to_string(lease.switch_ms()) + "\n\n");
    std::string ctype = "text/event-stream";
    if (!r.content_type.empty()) ctype = r.content_type;
    if (call.stream_map) ctype = call.stream_type;
    co_return co_await c.start_stream(200, std::move(ctype), sse_headers(mh));
  };
  cb.on_chunk = [&c, &call, &r](std::string_view bytes) -> asio::awaitable<bool> {
    if (!r.streaming) {
      r.body.append(bytes);
      co_return true;
    }
    r.tail.append(bytes);
    if (r.tail.size() > 2 * kTailBytes) r.tail.erase(0, r.tail.size() - kTailBytes);
    std::string mapped;
    if (call.stream_map) {  // a translated API (Ollama): SSE in, its own framing out
      mapped = call.stream_map(bytes);
      if (mapped.empty()) co_return true;  // an empty chunk would end the response
      bytes = mapped;
    }
    const bool ok = co_await c.chunk(bytes);  // written and flushed before the next read
    r.client_gone = !ok;
    co_return ok;
  };
  return cb;
}

// Why a relay ended without a complete answer: the child's death when it died under the lease.
// (Plain function: GCC 12 double-destroys class temporaries of ?: inside coroutines.)
Error relay_error(const Lease& lease, const Result<upstream::StreamResult>& res) {
  if (lease.crashed()) return lease.crash_error();
  Error e = res ? make_error(Errc::upstream_error, "incomplete response from " + lease.profile()) : res.error();
  if (lease.remote()) {  // say which remote failed, and how (502 refused/reset, 504 timed out)
    e.message = lease.profile() + ": remote " + lease.endpoint().to_string() + ": " + e.message;
    if (e.hint.empty()) e.hint = "the remote server failed or is down; GET /status shows its state";
  }
  return e;
}

// `gone`: cancelled when the client hangs up (the caller watches the connection for the whole call).
// `tps`: the generation speed the child reported (-1 = none), for the status page.
asio::awaitable<void> forward(Door& d, Request& req, Connection& c, const Call& call, Lease& lease,
                              Clock::time_point t0, std::shared_ptr<upstream::CancelToken> gone, double& tps) {
  const std::int64_t queue_ms = lease.queue_ms();
  upstream::Request ureq;
  ureq.method = call.method;
  ureq.target = call.target;
  ureq.body = forward_body(call, req, lease);
  if (call.stream) ureq.headers.emplace_back("Accept", "text/event-stream");
  upstream::StreamOptions sopt;
  sopt.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(d.opt.upstream_deadline);
  sopt.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(d.opt.upstream_idle);
  Relay r;
  auto res = co_await upstream::stream(d.strand, lease.endpoint(), std::move(ureq),
                                       relay_callbacks(c, call, lease, queue_ms, r), sopt, std::move(gone));
  c.unwatch();
  // Refused or reset by a child that was ready: if its process is gone, it is marked crashed now
  // (this request gets child_crashed; the queued ones wait for the restart).
  const bool broken = !res || (!res->complete && !res->cancelled && !r.upstream_error && !r.client_gone);
  if (broken && !lease.crashed()) co_await d.sup.check_alive(lease);
  const auto& model = lease.profile();
  if (r.client_gone || (res && res->cancelled)) {
    spdlog::info("http: client left during a {} request; upstream cancelled", model);
    count(d, model, 499, t0);  // nginx's "client closed request"
    co_return;
  }
  if (!res || (!res->complete && !r.upstream_error)) {
    Reply rep = error_reply(relay_error(lease, res));
    co_return co_await fail(d, c, model, call.shape, std::move(rep), t0);
  }
  if (r.upstream_error && r.status == 404 && !call.raw)
    co_return co_await fail(d, c, model, call.shape, missing_route_reply(call, r.body), t0);
  if (r.upstream_error)
    co_return co_await fail(d, c, model, call.shape, upstream_error_reply(r.status, r.body), t0);
  if (r.streaming) {
    count(d, model, 200, t0);
    tps = note_timings(d, model, timings_of(r.tail));
    HeaderList trailers = model_headers(model, queue_ms, lease.switch_ms());
    trailers.erase(trailers.begin());  // the model is in the head already
    co_await c.finish_stream(trailers);
    co_return;
  }
  // The answer first; the bookkeeping after it, off the caller's wait.
  Reply rep;
  if (!r.content_type.empty()) rep.content_type = r.content_type;
  const auto speeds = timings_of(r.body);  // a SAX pass over the timings object alone
  rep.body = call.body_map ? call.body_map(r.body) : std::move(r.body);
  if (call.body_map) rep.content_type = "application/json";
  rep.headers = lease_headers(lease, queue_ms);
  co_await c.send(std::move(rep));
  count(d, model, 200, t0);
  tps = note_timings(d, model, speeds);
}

}  // namespace

int retry_after_estimate(const Door& d) {
  // Everyone ahead needs about one request time each; a pending switch adds its usual cost.
  const double per_request = d.request_s.seeded ? d.request_s.value : 1.0;
  const double per_switch = d.switch_s.seeded ? d.switch_s.value : 0.0;
  const double est = per_request * (d.waiting + 1) + per_switch;
  const double capped = std::min(est, static_cast<double>(std::max(1, d.opt.queue.max_wait_s)));
  return std::max(1, static_cast<int>(std::ceil(capped)));
}

asio::awaitable<void> model_call(Door& d, Request& req, Connection& c, const RouteMatch& m) {
  const auto t0 = Clock::now();
  auto parsed = parse_call(d, req, m);
  const ApiShape shape = m.api ? m.api->shape : ApiShape::openai;
  if (!parsed) co_return co_await fail(d, c, "", shape, error_reply(parsed.error()), t0);
  co_await proxy_call(d, req, c, std::move(*parsed), t0);
}

asio::awaitable<void> proxy_call(Door& d, Request& req, Connection& c, ProxyCall call, Clock::time_point t0) {
  const ApiShape shape = call.shape;
  Waiting waiting(d);
  ModelLoad load(d, call.profile);  // the status page's per-model queue
  const std::string endpoint(req.target().substr(0, req.target().find('?')));
  // A client that hangs up while queued leaves the supervisor's queue at once, and one that hangs
  // up later cancels the child's generation: one watch for the whole call.
  auto gone = std::make_shared<upstream::CancelToken>();
  c.watch_disconnect(gone);
  // Not `cond ? co_await a : co_await b`: GCC 12 destroys that temporary twice (the lease's
  // release would run while the lease is still in use).
  Result<Lease> lease = make_error(Errc::internal, "no lease");
  if (call.stream)
    lease = co_await acquire_streaming(d, c, call, gone);
  else
    lease = co_await d.sup.acquire(call.profile, std::nullopt, gone);
  waiting.done();
  if (!lease) c.unwatch();
  if (!lease && gone->cancelled()) {
    count(d, call.profile, 499, t0);  // nginx's "client closed request"
    note_request(d, {call.profile, endpoint, 499, -1, -1, ms_since(t0), -1});
    co_return;
  }
  if (!lease) {
    Error e = lease.error();
    if (e.code == Errc::queue_full && e.retry_after_s <= 0) e.retry_after_s = retry_after_estimate(d);
    co_await fail(d, c, call.profile, shape, error_reply(e), t0);
    note_request(d, {call.profile, endpoint, c.status(), -1, -1, ms_since(t0), -1});
    co_return;
  }
  if (call.keep_alive_s) lease->set_keep_alive(*call.keep_alive_s);  // applied when it is released
  if (call.times) *call.times = CallTimes{t0, lease->switch_ms()};
  load.leased();
  const auto held = Clock::now();
  double tps = -1;
  co_await forward(d, req, c, call, *lease, t0, std::move(gone), tps);
  d.request_s.add(std::chrono::duration<double>(Clock::now() - held).count());
  note_request(d, {lease->profile(), endpoint, c.status() ? c.status() : 499, lease->queue_ms(),
                   lease->switch_ms(), ms_since(t0), tps});
}

}  // namespace kevlaya::http
