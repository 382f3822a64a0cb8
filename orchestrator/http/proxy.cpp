// Model calls (every row of apis.cpp's table, and /upstream/{model}/{path}): find `model` (body,
// query or path), acquire a lease (the supervisor admits: queue depth, max wait; keep-alives in the
// API's own form while a swap is in progress), forward to the child and relay its answer chunk by
// chunk. Errors leave in the caller's API shape (apis.hpp).
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <stdexcept>

#include "common/bounded_json.hpp"
#include "common/clock.hpp"
#include "http/anthropic_wait.hpp"
#include "http/apis.hpp"
#include "http/bodies.hpp"
#include "http/detail.hpp"
#include "http/loading_text.hpp"
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

// /upstream/{model}/{path}?{query}: the model from the path, everything else as sent.
Result<Call> parse_upstream(const Door& d, const Request& req, std::string_view arg) {
  const auto slash = arg.find('/');
  auto made = raw_call(d, std::string(arg.substr(0, slash)));
  if (!made) return made.error();
  Call call = std::move(*made);
  call.method = req.method() == bhttp::verb::get ? "GET" : "POST";
  const std::string_view target(req.target().data(), req.target().size());
  call.target = "/" + std::string(slash == std::string_view::npos ? "" : arg.substr(slash + 1));
  if (const auto q = query_of(target); !q.empty()) call.target += "?" + std::string(q);
  if (!req.body().empty()) {  // a JSON body asking for a stream gets keep-alives while it waits
    if (auto j = parse_json_bounded(req.body()); j && j->is_object()) {
      const auto s = j->find("stream");  // any type: the child judges the body; the door only reads a true
      call.stream = s != j->end() && s->is_boolean() && s->get<bool>();
    }
  }
  return call;
}

Result<Call> parse_call(const Door& d, const Request& req, const RouteMatch& m) {
  if (m.route == Route::upstream) return parse_upstream(d, req, m.arg);
  const std::string_view target(req.target().data(), req.target().size());
  if (m.api->from == ModelFrom::query) {  // GET /props?model=, /slots?model=
    auto call = raw_call(d, query_param(query_of(target), "model"));
    if (call) {
      call->shape = m.api->shape;
      call->method = "GET";
      call->target = std::string(target);
    }
    return call;
  }
  Call call;
  call.shape = m.api->shape;
  auto parsed = parse_model_call(ledger::config_of(d.snap), req.body());
  if (!parsed) return parsed.error();
  static_cast<ModelCall&>(call) = std::move(parsed.value());
  call.target = std::string(target.substr(0, target.find('?')));
  if (call.shape == ApiShape::anthropic && call.stream && call.target == "/v1/messages" &&
      call.cfg->loading_messages(*call.prof) == config::LoadingMessages::reasoning) {  // a wait as a thinking block
    auto s = std::make_shared<AnthropicWait>(call.requested.empty() ? call.profile() : call.requested);
    call.stream_map = [s](std::string_view bytes) { return s->feed(bytes); };
    call.wait_map = [s](const std::string& text) { return s->thinking(text); };
    call.stream_type = "text/event-stream";
  }
  return call;
}

// The child's body: the caller's bytes, moved (nothing reads them after this: the record and the
// capture took theirs first), or their rewrite.
std::string forward_body(const Call& call, Request& req, const Lease& lease) {
  std::string sent = call.body_text ? *call.body_text : std::move(req.body());
  if (call.raw) return sent;
  return child_body(call, std::move(sent), lease.upstream_model(), lease.lora_scales());
}

// The call's figures (a trailer of a stream: without the model, which its head has).
HeaderList model_headers(const std::string& model, std::int64_t queue_ms, std::int64_t swap_ms, bool with_model = true) {
  HeaderList h;
  h.reserve(8);  // room for what lease_headers, sse_headers and the child's relayed headers add
  if (with_model) h.emplace_back("X-Kevlaya-Model", model);
  h.emplace_back("X-Kevlaya-Queue-Ms", std::to_string(queue_ms));
  h.emplace_back("X-Kevlaya-Swap-Ms", std::to_string(swap_ms));
  return h;
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

void count(Door& d, const std::string& model, int status, Clock::time_point t0) {
  const std::string_view m = model.empty() ? std::string_view(kUnknownModel) : std::string_view(model);
  d.metrics.inc("kevlaya_requests_total", {{"model", m}, {"status", std::to_string(status)}});
  d.metrics.observe("kevlaya_request_duration_seconds", {{"model", m}},
                    std::chrono::duration<double>(Clock::now() - t0).count());
}

// Records the child's reported speeds and token counts (metrics, the request's record, and the
// lease: what the call left in its slot prices the child's reload).
void note_timings(Door& d, const Lease& lease, const std::optional<Timings>& t, RequestNote& rec) {
  if (!t) return;
  const std::string& model = lease.profile();
  if (t->prompt_n || t->cache_n || t->predicted_n)
    lease.note_context(static_cast<std::int64_t>(t->prompt_n.value_or(0) + t->cache_n.value_or(0) + t->predicted_n.value_or(0)),
                       t->prompt_per_second.value_or(0));
  if (t->predicted_per_second > 0)
    d.metrics.observe("kevlaya_generation_tokens_per_second", {{"model", model}}, *t->predicted_per_second);
  if (t->prompt_per_second > 0)
    d.metrics.observe("kevlaya_prompt_tokens_per_second", {{"model", model}}, *t->prompt_per_second);
  const auto count_of = [](const std::optional<double>& v) { return v ? static_cast<std::int64_t>(*v) : -1; };
  rec.decode_tps = t->predicted_per_second.value_or(-1);
  rec.prefill_tps = t->prompt_per_second.value_or(-1);
  rec.prompt_tokens = count_of(t->prompt_n);
  rec.generated_tokens = count_of(t->predicted_n);
  rec.cached_tokens = count_of(t->cache_n);
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
  const std::string said = (j ? error_message(*j) : std::nullopt).value_or(body.substr(0, 200));
  return error_reply(make_error(Errc::not_found,
                                "model '" + call.profile() + "' is served by a llama-server that has no " +
                                    call.method + " " + call.target.substr(0, call.target.find('?')) +
                                    " (it answered 404: " + said + ")",
                                "use a newer llama-server build for this profile (docs/http.md lists "
                                "which builds lack which endpoints)"));
}

// What the relay learnt from the child.
struct Relay {
  int status = 0;
  bool streaming = false;       // relayed chunk by chunk (asked for, or the child sent SSE)
  bool upstream_error = false;  // non-200: body collected for pass-through
  bool client_gone = false;
  bool too_large = false;       // a body that must be whole passed limits.max_answer_bytes: 502
  bool passthrough = false;     // a plain answer past the cap, relayed chunked (not SSE)
  std::string content_type;
  std::string body;  // whole body (non-streaming or error), at most limits.max_answer_bytes
  std::string tail;  // streaming: last bytes, for timings
  Clock::time_point first_byte{};  // the child's first body byte (time to first token)
  activity::CaptureWriter* capture = nullptr;  // captures on: the bytes as the client gets them
  HeaderList passed;  // call.relay_headers: the child's own response headers, for the client
};

// The child's response headers a relayed answer keeps (call.relay_headers): all but the framing,
// the type (set apart), the door's own (Server, Date, CORS) and the door's figures.
bool passes(std::string_view name) {
  const auto same = [](std::string_view a, std::string_view b) {
    return beast::iequals(beast::string_view(a.data(), a.size()), beast::string_view(b.data(), b.size()));
  };
  for (const std::string_view drop : {"content-length", "content-type", "transfer-encoding", "connection",
                                      "keep-alive", "trailer", "upgrade", "proxy-connection", "server", "date"})
    if (same(name, drop)) return false;
  const auto starts = [name, same](std::string_view p) {
    return name.size() >= p.size() && same(name.substr(0, p.size()), p);
  };
  return !starts("access-control-") && !starts("x-kevlaya-");
}

HeaderList with_passed(HeaderList h, const Relay& r) {
  h.insert(h.end(), r.passed.begin(), r.passed.end());
  return h;
}

// A non-streamed answer past the cap: a plain one goes out chunked from here on (what is
// buffered first, held for on_idle's write with the rest of this read), so memory never follows
// its size; one that must be whole is refused.
bool overflow(Connection& c, const Call& call, const Lease& lease, std::int64_t queue_ms, Relay& r) {
  if (r.upstream_error || call.body_map) {
    r.too_large = true;
    return false;
  }
  r.streaming = r.passthrough = true;
  const std::string_view ctype = r.content_type.empty() ? std::string_view("application/json") : r.content_type;
  if (!c.hold_head(200, ctype, with_passed(lease_headers(lease, queue_ms), r)) || !c.hold_chunk(r.body)) {
    r.client_gone = true;
    return false;
  }
  r.tail = r.body.substr(r.body.size() - std::min(r.body.size(), kTailBytes));
  std::string().swap(r.body);
  return true;
}

Error too_large_error(const Call& call, std::int64_t cap) {
  return make_error(Errc::upstream_error,
                    call.profile() + " answered more than " + std::to_string(cap) +
                        " bytes (limits.max_answer_bytes), in a body the door must hold whole",
                    "raise limits.max_answer_bytes, or ask for a stream (\"stream\": true)");
}

// What the relay's callbacks work with, in the relaying call's frame: each captures one pointer,
// which std::function keeps in place (six captures were an allocation per callback and call).
struct RelayCtx {
  Connection& c;
  const Call& call;
  const Lease& lease;
  std::int64_t queue_ms;
  std::int64_t cap;  // limits.max_answer_bytes
  Relay& r;
};

upstream::StreamCallbacks relay_callbacks(const RelayCtx& x) {
  upstream::StreamCallbacks cb;
  // The head and the chunks are held, not written: they leave together in on_idle, before the
  // relay waits on the child again (or at the end).
  cb.on_head = [&x](int status, upstream::HeaderViews h) {
    auto& [c, call, lease, queue_ms, cap, r] = x;
    r.status = status;
    for (const auto& [k, v] : h) {
      if (beast::iequals(beast::string_view(k.data(), k.size()), "content-type")) r.content_type = v;
      if (call.relay_headers && passes(k)) r.passed.emplace_back(k, v);
    }
    if (status != 200) r.upstream_error = true;
    r.streaming = !r.upstream_error && (call.stream || r.content_type.rfind("text/event-stream", 0) == 0);
    if (!r.streaming) return true;
    if (c.head_sent() && call.stream_map) return true;  // NDJSON has no comments: the trailers say it
    if (c.head_sent())  // the head went out with keep-alives; the figures follow as a comment
      return c.hold_chunk(": kevlaya queue_ms=" + std::to_string(queue_ms) + " swap_ms=" +
                          std::to_string(lease.switch_ms()) + "\n\n");
    std::string_view ctype = "text/event-stream";
    if (!r.content_type.empty()) ctype = r.content_type;
    if (call.stream_map) ctype = call.stream_type;
    return c.hold_head(200, ctype, with_passed(sse_headers(lease_headers(lease, queue_ms)), r));
  };
  cb.on_chunk = [&x](std::string_view bytes) {
    auto& [c, call, lease, queue_ms, cap, r] = x;
    if (r.first_byte == Clock::time_point{}) r.first_byte = Clock::now();
    if (!r.streaming && static_cast<std::int64_t>(r.body.size() + bytes.size()) <= cap) {
      r.body.append(bytes);
      if (r.capture && (!call.body_map || r.upstream_error)) r.capture->response(bytes);  // sent as it is
      return true;
    }
    if (!r.streaming && !overflow(c, call, lease, queue_ms, r)) return false;
    r.tail.append(bytes);
    if (r.tail.size() > 2 * kTailBytes) r.tail.erase(0, r.tail.size() - kTailBytes);
    std::string mapped;
    if (call.stream_map) {  // a translated API (Ollama): SSE in, its own framing out
      mapped = call.stream_map(bytes);
      if (mapped.empty()) return true;  // an empty chunk would end the response
      bytes = mapped;
    }
    if (r.capture) r.capture->response(bytes);  // compressed as it passes
    const bool ok = c.hold_chunk(bytes);
    r.client_gone = !ok;
    return ok;
  };
  cb.on_idle = [&x]() -> asio::awaitable<bool> {  // before the relay waits on the child
    const bool ok = co_await x.c.flush();
    x.r.client_gone = !ok;
    co_return ok;
  };
  return cb;
}

// A collected answer as the child gave it: its status, type, headers (call.relay_headers) and bytes.
Reply relayed_reply(Relay r, const Lease& lease, std::int64_t queue_ms) {
  Reply rep;
  rep.status = r.status;
  if (!r.content_type.empty()) rep.content_type = r.content_type;
  rep.body = std::move(r.body);
  rep.headers = with_passed(lease_headers(lease, queue_ms), r);
  return rep;
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

// `me.cancel`: cancelled when the client hangs up (the caller watches the connection for the whole
// call) or an admin cancels the call. `me.rec` gets the child, waits, time to first token, timings
// and error kind.
asio::awaitable<void> forward(Door& d, Request& req, Connection& c, const Call& call, Lease& lease,
                              Clock::time_point t0, InFlight& me) {
  RequestNote& rec = me.rec;
  const std::int64_t queue_ms = lease.queue_ms();
  rec.child = lease.shared()->child;
  rec.queue_ms = queue_ms;
  rec.swap_ms = lease.switch_ms();
  upstream::Request ureq;
  ureq.method = call.method;
  ureq.target = call.target;
  ureq.body = forward_body(call, req, lease);
  if (call.stream) ureq.headers.emplace_back("Accept", "text/event-stream");
  ureq.headers.insert(ureq.headers.end(), call.headers.begin(), call.headers.end());
  Relay r;
  r.capture = me.capture.get();  // null with captures off
  const RelayCtx ctx{c, call, lease, queue_ms, d.opt.limits.max_answer_bytes, r};
  auto res = co_await upstream::stream(d.strand, lease.endpoint(), std::move(ureq), relay_callbacks(ctx),
                                       d.sup.call_options(lease, d.opt.upstream_deadline), me.cancel);
  c.unwatch();
  if (r.first_byte != Clock::time_point{})
    rec.ttft_ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.first_byte - t0).count();
  // Refused or reset by a child that was ready: if its process is gone, it is marked crashed now
  // (this request gets child_crashed; the queued ones wait for the restart). A timeout: its
  // health is probed, and a child that does not answer is replaced (`hung`).
  const bool broken =
      !res || (!res->complete && !res->cancelled && !r.upstream_error && !r.client_gone && !r.too_large);
  if (broken && !lease.crashed()) co_await d.sup.check_alive(lease);
  if (!res && res.error().code == Errc::timeout && !lease.crashed()) co_await d.sup.check_responsive(lease);
  const auto& model = lease.profile();
  if (me.cancelled && !r.client_gone) {
    rec.error = "cancelled";
    co_return co_await fail(d, c, model, call.shape, error_reply(cancelled_error(me.id)), t0);
  }
  if (r.client_gone || (res && res->cancelled)) {
    spdlog::info("http: client left during a {} request; upstream cancelled", model);
    count(d, model, 499, t0);  // nginx's "client closed request"
    rec.error = "client_left";
    co_return;
  }
  if (r.too_large) {
    rec.error = "upstream_error";
    spdlog::warn("http: {} answered more than limits.max_answer_bytes ({}); refused", model,
                 d.opt.limits.max_answer_bytes);
    co_return co_await fail(d, c, model, call.shape, error_reply(too_large_error(call, d.opt.limits.max_answer_bytes)), t0);
  }
  if (r.passthrough && (!res || !res->complete)) {  // a JSON body cut short: no error event in it
    const Error why = relay_error(lease, res);
    spdlog::warn("http: {} answer broke off after the head: {}", model, why.message);
    count(d, model, 502, t0);
    c.close();
    co_return;
  }
  if (!res || (!res->complete && !r.upstream_error)) {
    Error e = relay_error(lease, res);
    rec.error = to_string(e.code);
    if (!c.sees_logs()) e.detail.clear();  // a crash's log tail: admin keys only
    co_return co_await fail(d, c, model, call.shape, error_reply(e), t0);
  }
  if (r.upstream_error) rec.error = r.status == 404 && !call.raw ? "not_found" : "upstream_error";
  if (r.upstream_error && r.status == 404 && !call.raw)
    co_return co_await fail(d, c, model, call.shape, missing_route_reply(call, r.body), t0);
  if (r.upstream_error && call.relay_headers) {  // a proxied answer: the target's status and bytes
    count(d, model, r.status, t0);
    co_await c.send(relayed_reply(std::move(r), lease, queue_ms));
    co_return;
  }
  if (r.upstream_error)
    co_return co_await fail(d, c, model, call.shape, upstream_error_reply(r.status, r.body), t0);
  if (r.streaming) {
    count(d, model, 200, t0);
    note_timings(d, lease, timings_of(r.tail), rec);
    co_await c.finish_stream(model_headers(model, queue_ms, lease.switch_ms(), /*with_model=*/false));
    co_return;
  }
  // The answer first; the bookkeeping after it, off the caller's wait.
  Reply rep;
  if (!r.content_type.empty()) rep.content_type = r.content_type;
  const auto speeds = timings_of(r.body);  // a SAX pass over the timings object alone
  rep.body = call.body_map ? call.body_map(r.body) : std::move(r.body);
  if (call.body_map) rep.content_type = "application/json";
  rep.headers = with_passed(lease_headers(lease, queue_ms), r);
  if (r.capture && call.body_map) r.capture->response(rep.body);  // translated: what the client gets
  co_await c.send(std::move(rep));
  count(d, model, 200, t0);
  note_timings(d, lease, speeds, rec);
}

// The record's last facts (status, bytes out, duration), then the ring, /events and the history;
// its waits go to the per-model histograms.
void finish_record(Door& d, const Connection& c, RequestNote&& rec, int status, Clock::time_point t0) {
  if (!rec.model.empty() && rec.queue_ms >= 0)
    d.metrics.observe("kevlaya_queue_wait_seconds", {{"model", rec.model}}, static_cast<double>(rec.queue_ms) / 1e3);
  if (!rec.model.empty() && rec.ttft_ms >= 0)
    d.metrics.observe("kevlaya_time_to_first_token_seconds", {{"model", rec.model}},
                      static_cast<double>(rec.ttft_ms) / 1e3);
  rec.status = status;
  rec.bytes_out = c.bytes_out();
  rec.total_ms = ms_since(t0);
  note_request(d, std::move(rec));
}

// A call through proxy_call ends: its capture (captures on), then its record.
void finish_call(Door& d, const Request& req, const Connection& c, InFlight& me, int status, Clock::time_point t0) {
  if (d.captures) keep_capture(d, req, me, status);
  finish_record(d, c, std::move(me.rec), status, t0);
}

}  // namespace

Result<ProxyCall> raw_call(const Door& d, std::string requested) {
  auto cfg = ledger::config_of(d.snap);
  auto prof = cfg->resolve_model(requested);
  if (!prof) return prof.error();
  ProxyCall call;
  call.requested = std::move(requested);
  call.cfg = std::move(cfg);
  call.prof = *prof;
  call.raw = true;
  return call;
}

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
  if (!parsed) {
    co_await fail(d, c, "", shape, error_reply(parsed.error()), t0);
    RequestNote rec = start_record(d, req, c, m.route == Route::upstream ? "llama-server" : api_name(shape));
    rec.error = to_string(parsed.error().code);
    co_return finish_record(d, c, std::move(rec), c.status(), t0);
  }
  co_await proxy_call(d, req, c, std::move(*parsed), t0);
}

asio::awaitable<void> proxy_call(Door& d, Request& req, Connection& c, ProxyCall call, Clock::time_point t0) {
  const ApiShape shape = call.shape;
  InFlight me(d, start_record(d, req, c, api_of(call)));  // listed by GET /requests until it ends
  if (me.capture) co_await capture_request(d, req, me);
  RequestNote& rec = me.rec;
  rec.model = call.profile();
  Waiting waiting(d);
  ModelLoad load(d, call.profile());  // the status page's per-model queue
  // A client that hangs up while queued leaves the supervisor's queue at once, and one that hangs
  // up later cancels the child's generation: one watch for the whole call (an admin's cancel too).
  const auto& gone = me.cancel;
  c.watch_disconnect(gone);
  // A free slot (most calls) is granted here and now: no coroutine, waiting task or keep-alive.
  // Not `cond ? co_await a : co_await b` below: GCC 12 destroys that temporary twice (the lease's
  // release would run while the lease is still in use).
  auto admitted = d.sup.admit_now(call.profile(), gone);
  if (!admitted) throw std::logic_error("the door runs off the supervisor's strand");  // Door::strand is it
  Result<Lease> lease = make_error(Errc::internal, "no lease");
  if (auto* now = std::get_if<Result<Lease>>(&*admitted)) {
    lease = std::move(*now);
  } else {
    auto ticket = std::get<supervisor::Supervisor::Ticket>(std::move(*admitted));
    if (call.stream) lease = co_await acquire_streaming(d, c, call, gone, std::move(ticket));
    else lease = co_await d.sup.wait(std::move(ticket), gone);
  }
  waiting.done();
  if (!lease) c.unwatch();
  if (!lease && me.cancelled) {
    rec.error = "cancelled";
    co_await fail(d, c, call.profile(), shape, error_reply(cancelled_error(me.id)), t0);
    co_return finish_call(d, req, c, me, c.status(), t0);
  }
  if (!lease && gone->cancelled()) {
    count(d, call.profile(), 499, t0);  // nginx's "client closed request"
    rec.error = "client_left";
    co_return finish_call(d, req, c, me, 499, t0);
  }
  if (!lease) {
    Error e = lease.error();
    if (!c.sees_logs()) e.detail.clear();  // a failed start's log tail: admin keys only
    if (e.code == Errc::queue_full && e.retry_after_s <= 0) e.retry_after_s = retry_after_estimate(d);
    co_await fail(d, c, call.profile(), shape, error_reply(e), t0);
    rec.error = to_string(e.code);
    co_return finish_call(d, req, c, me, c.status(), t0);
  }
  if (call.keep_alive_s) lease->set_keep_alive(*call.keep_alive_s);  // applied when it is released
  if (!lease->remote()) d.child_endpoints[lease->shared()->child] = lease->endpoint();  // for /metrics
  if (call.times) *call.times = CallTimes{t0, lease->switch_ms()};
  load.leased();
  me.leased = true;
  const auto held = Clock::now();
  co_await forward(d, req, c, call, *lease, t0, me);
  d.request_s.add(std::chrono::duration<double>(Clock::now() - held).count());
  rec.model = lease->profile();
  const int status = rec.error == "client_left" || !c.status() ? 499 : c.status();
  finish_call(d, req, c, me, status, t0);
}

}  // namespace kevlaya::http
