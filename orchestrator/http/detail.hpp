// Internals of the REST door shared by server.cpp, router.cpp, proxy.cpp and runs.cpp (Beast
// types live here, never in a public header). Everything in Door and Connection runs on the
// door's strand (the supervisor's: admission needs no hop), so none of it needs a lock.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <functional>

#include "activity/capture.hpp"
#include "activity/recorder.hpp"
#include "http/apis.hpp"
#include "http/bodies.hpp"
#include "http/errors.hpp"
#include "http/gate.hpp"
#include "http/metrics.hpp"
#include "http/server.hpp"
#include "supervisor/tools_host.hpp"
#include "upstream/client.hpp"

namespace kevlaya::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;
using Request = bhttp::request<bhttp::string_body>;
using Strand = asio::any_io_executor;  // the supervisor's (Supervisor::strand)

class Connection;
class InFlight;
class RunQueue;
struct CallTimes;  // ollama.hpp
struct EventClient;

// Exponential moving average, for Retry-After estimates.
struct Ewma {
  double value = 0;
  bool seeded = false;
  void add(double x) {
    value = seeded ? 0.8 * value + 0.2 * x : x;
    seeded = true;
  }
};

// A model call's outcome: the one request record (activity/record.hpp), kept in the status page's
// ring, published as a `request` event and persisted by Door::history. JSON only when asked for.
using RequestNote = activity::Record;

// What the status page shows beyond the supervisor's snapshot (feed.cpp): the last model calls
// and pipeline runs (bounded rings, also published on /events) and each model's load at the door.
struct Feed {
  struct Load {
    int waiting = 0;    // door requests for the model without a lease yet
    int in_flight = 0;  // holding a lease
  };
  std::deque<RequestNote> recent_requests;  // oldest first, at most kRecent
  std::deque<nlohmann::json> recent_runs;
  std::map<std::string, Load> load;
  std::map<std::string, std::int64_t> since_ms;  // when each child entered its phase (unix ms)
  // A `queue` event is published at most every kQueueTick (bursts would flood /events clients).
  std::shared_ptr<asio::steady_timer> tick;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // false once the door is gone
  bool tick_armed = false;
  Feed() = default;
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;
  ~Feed() { *alive = false; }
};

// The door's shared state (owned by Server, kept alive by every connection).
class Door {
 public:
  Door(supervisor::Supervisor& s, const ledger::SnapshotPtr& c, ServerOptions o, std::shared_ptr<PipelineRunner> r);
  ~Door();

  void request_done();  // in_flight--, wakes a drain waiting for zero
  // The options in force (construction, Server::set_config): `gate` is built from them, and a
  // credential header is dropped from activity.session_headers (the loader refuses these; whatever
  // the options say, a secret is never recorded). Once per configuration, not per request.
  void use_options(ServerOptions o);

  Strand strand;
  supervisor::Supervisor& sup;
  // The version in force (Server::set_config): its configuration and its plan. A handler that
  // waits and then reads it again copies `snap` first: a reload meanwhile may free the one it read.
  ledger::SnapshotPtr snap;
  const config::Config& cfg() const { return snap->config; }
  ServerOptions opt;
  GatePolicy gate;  // built once from opt (Host, Origin rules): use_options
  std::shared_ptr<PipelineRunner> runner;
  ReloadFn reload;  // POST /admin/reload (empty = not available)
  Metrics metrics;
  std::unique_ptr<RunQueue> runs;
  Clock::time_point started_at = Clock::now();
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
  std::set<Connection*> conns;
  int evicting = 0;   // connections closed to make room, not yet gone from `conns`
  int refusing = 0;   // connections past every slot being answered 503 (not counted as open)
  int waiting = 0;    // model requests admitted at the door, not yet holding a lease
  int in_flight = 0;  // requests being handled
  bool draining = false;
  bool preload_ready = false;  // /health: the preloaded children have started once (router.cpp)
  asio::steady_timer drained;  // cancelled when in_flight reaches 0 while draining
  Ewma request_s;              // lease hold time of recent model calls
  Ewma switch_s;               // recent switch durations
  // From the supervisor's event stream (never polled): the latest phase of each child, and the
  // GET /events clients the events are fanned out to.
  std::map<std::string, supervisor::Phase> phases;
  std::set<std::shared_ptr<EventClient>> event_clients;
  std::uint64_t next_event_id = 1;
  Feed feed;                            // the status page's extras (feed.cpp)
  std::unique_ptr<activity::Recorder> history;  // the persisted request history; null = off
  std::unique_ptr<activity::CaptureRing> captures;  // capture.enabled: recent bodies; null = off
  std::map<std::uint64_t, InFlight*> in_progress;  // model calls now (GET /requests), by id
  // Where each local child's last lease went (its per-start key included): /metrics reads the
  // ready ones' own metrics from there, never through a lease (child_metrics.cpp).
  std::map<std::string, upstream::Endpoint> child_endpoints;
  std::unique_ptr<supervisor::ToolsHost> tools;  // opt.tools enabled: started by Server::start
  std::uint64_t next_request_id = 1;
  supervisor::Subscription events_sub;  // last member: unsubscribed first
};

// One client connection: reads requests within the limits, writes whole or chunked responses.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<Door> door, asio::ip::tcp::socket socket);
  ~Connection();
  asio::awaitable<void> run();  // the request loop, until close, timeout or shutdown
  // Accepted past every slot: the documented 503 with Retry-After, then a drained close (closing
  // with the client's request unread would reset the connection before it reads the answer).
  // `drain` false (too many being refused): closed right after the answer.
  void refuse(bool drain);

  asio::awaitable<bool> send(Reply r);  // a whole response; false when the client is gone
  // send() for a handler that ends with it: `co_return co_await c.reply(r);`
  asio::awaitable<void> reply(Reply r) { co_await send(std::move(r)); }
  // A streamed response: its head, chunked for HTTP/1.1, ended by closing the connection for
  // HTTP/1.0. start_stream and chunk write at once, with whatever is held; hold_head and
  // hold_chunk only hold (plain calls: a relay holds what it got from one read of the child and
  // flushes before it waits for the next, so a head, its chunks and the last chunk that came
  // together leave in one write). False when the client is gone.
  asio::awaitable<bool> start_stream(int status, std::string content_type, HeaderList headers);
  asio::awaitable<bool> chunk(std::string_view data);  // one chunk
  bool hold_head(int status, std::string_view content_type, const HeaderList& headers);
  bool hold_chunk(std::string_view data);
  asio::awaitable<bool> flush();  // writes what is held
  asio::awaitable<bool> finish_stream(const HeaderList& trailers = {});  // last chunk, with what is held
  bool head_sent() const { return head_sent_; }
  int status() const { return status_; }
  std::int64_t bytes_out() const { return bytes_out_; }  // response body bytes of this request so far
  const std::string& peer() const;                       // the client's address ("" when unknown)

  // Cancels `token` if the client closes its end while the response is pending.
  void watch_disconnect(std::shared_ptr<upstream::CancelToken> token);
  void unwatch();
  void close_if_idle();  // shutdown: closes a connection that is between requests
  void close();          // shutdown deadline: closes it whatever it is doing

  // A connection accepted past max_connections: it may ask /health or /metrics once, then closes.
  void set_reserve_only() { reserve_only_ = true; }
  // Under pressure a connection that is not working on an authorised request (not yet sent a
  // whole header, kept alive between requests, or reading the body of a request sent without a
  // valid key) for `idle`, or one answered and closing, may be closed to make room for a new one.
  bool evictable(Clock::time_point now, Clock::duration idle) const {
    return !busy_ && !evicted_ && !refusing_ && (closing_ || now - last_active_ >= idle);
  }
  bool closing() const { return closing_; }
  Clock::time_point last_active() const { return last_active_; }
  void evict();
  bool reserve_only() const { return reserve_only_; }
  // An allowed cross-origin request: the response names the origin (CORS), for this request only.
  void set_cors_origin(std::string_view origin) { cors_origin_.assign(origin.data(), origin.size()); }
  // This request's caller may read children's log tails (auth.hpp: sees_logs); set by the gate.
  void set_sees_logs(bool v) { sees_logs_ = v; }
  bool sees_logs() const { return sees_logs_; }

 private:
  asio::awaitable<std::optional<Request>> read_request();
  asio::awaitable<void> linger_close();
  void peek_for_hangup(std::uint64_t gen, std::shared_ptr<upstream::CancelToken> token);
  bool write_done(boost::system::error_code ec);

  // One timer per connection, not one per operation as Beast's tcp_stream arms: bound() sets
  // `deadline_` (a store) for the reads and writes until its guard goes out of scope, which clears
  // it (the wait for a model is never bounded); the watchdog closes the socket once a deadline
  // passes with its operation still pending, and is re-armed only for a deadline earlier than its own.
  struct [[nodiscard]] Bounded {
    Connection& c;
    ~Bounded() { c.deadline_ = Clock::time_point::max(); }
  };
  Bounded bound(std::chrono::seconds s);
  void arm(Clock::time_point at);
  void on_watchdog(boost::system::error_code ec, std::uint64_t gen);

  std::shared_ptr<Door> door_;
  asio::ip::tcp::socket socket_;
  mutable std::optional<std::string> peer_;  // read once (a system call), then every request's
  asio::steady_timer watchdog_;
  Clock::time_point deadline_ = Clock::time_point::max();  // of the pending operation; max = none
  Clock::time_point armed_ = Clock::time_point::max();     // the watchdog's expiry; max = not armed
  std::uint64_t watchdog_gen_ = 0;
  beast::flat_buffer buffer_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool chunked_ = true;  // the stream in progress is chunked (HTTP/1.1); else ended by the close
  bool failed_ = false;
  bool head_sent_ = false;
  bool in_request_ = false;
  bool reserve_only_ = false;
  bool busy_ = false;     // from a complete header to the end of its response
  bool evicted_ = false;
  bool body_skipped_ = false;  // refused on its header (its key): answered, its body never read
  bool closing_ = false;       // answered, draining what the client still sends before the close
  bool refusing_ = false;      // accepted past every slot (Door::refusing)
  Clock::time_point last_active_ = Clock::now();  // accepted, or last response finished
  std::string cors_origin_;  // empty = no CORS headers
  bool sees_logs_ = false;   // of the request being served
  std::uint64_t requests_ = 0;  // requests read on this connection
  int status_ = 0;
  std::int64_t bytes_out_ = 0;
  std::uint64_t watch_gen_ = 0;
  char peek_byte_ = 0;  // watch_disconnect's one-byte peek
  std::string held_;    // a streamed response's bytes not written yet (hold_head, hold_chunk)
};

// router.cpp: dispatches one request (auth, then the route); writes the whole response.
asio::awaitable<void> route(Door& d, Request& req, Connection& c);
void describe_metrics(Metrics& m);
void record_switch(const std::shared_ptr<Door>& d, const supervisor::SwitchRecord& rec);

// events.cpp: the supervisor's events as JSON, their fan-out, and GET /events (SSE).
nlohmann::json failure_json(const supervisor::ChildFailure& f);
// Removes every `log_tail` member, at any depth (for a caller that may not read them: sees_logs).
void drop_log_tails(nlohmann::json& j);
nlohmann::json switch_json(const supervisor::SwitchRecord& s);
nlohmann::json remote_json(const remote::Health& st);  // /status profiles[].remote
void on_event(const std::shared_ptr<Door>& d, const supervisor::Event& e);  // on the door strand
void end_event_streams(Door& d);  // shutdown: every /events stream ends now
void publish(Door& d, const nlohmann::json& event);  // one event to every /events client
asio::awaitable<void> events(Door& d, Connection& c);

// A model call as proxy.cpp forwards it: the parsed body, where it goes, in which API's shape.
struct ProxyCall : ModelCall {
  std::string method = "POST";
  std::string target;  // path (and query) on the child
  ApiShape shape = ApiShape::openai;
  bool raw = false;    // forward the body byte for byte (/upstream/, GET routes)
  std::optional<std::string> body_text;  // forwarded instead of the request's body (translations)
  // Translated APIs (Ollama): the child's SSE bytes -> the client's (stateful; "" = nothing yet),
  // its whole JSON answer -> the client's, and the streamed content type.
  std::function<std::string(std::string_view)> stream_map;
  std::function<std::string(const std::string&)> body_map;
  std::string stream_type;
  std::shared_ptr<CallTimes> times;  // filled when the lease is held (the maps' durations)
  // loading_messages: reasoning: a wait's progress text -> the client's framing (Ollama's thinking).
  std::function<std::string(const std::string&)> wait_map;
  upstream::Headers headers;   // extra request headers for the child (/cors-proxy's proxied ones)
  bool relay_headers = false;  // the child's response headers reach the client (/cors-proxy)
};

// A raw call to the profile `requested` names (Config::resolve_model, in the door's configuration
// of now, which the call keeps). Errors: 404 (unknown model).
Result<ProxyCall> raw_call(const Door& d, std::string requested);

std::string_view api_name(ApiShape s);          // the record's `api` (activity.cpp)
std::string_view api_of(const ProxyCall& call);  // api_name, or "llama-server" for a raw call

// proxy.cpp: a model call (a row of apis.cpp's table, or /upstream/{model}/{path}).
asio::awaitable<void> model_call(Door& d, Request& req, Connection& c, const RouteMatch& m);
// Queue, lease (swap), forward and relay one call; errors in call.shape. `t0`: request arrival.
asio::awaitable<void> proxy_call(Door& d, Request& req, Connection& c, ProxyCall call, Clock::time_point t0);

// lease_wait.cpp: the wait of a streaming call queued by admit_now (`ticket`) for its lease: while
// it waits on a swap, sends the 200 SSE head and an SSE comment every keepalive_interval so the
// client (and proxies) keep the connection open; with loading_messages: reasoning, what it waits
// for (queue, load progress) as text the chat shows, once per change.
asio::awaitable<Result<supervisor::Lease>> acquire_streaming(Door& d, Connection& c, const ProxyCall& call,
                                                             std::shared_ptr<upstream::CancelToken> cancel,
                                                             supervisor::Supervisor::Ticket ticket);
HeaderList sse_headers(HeaderList h);  // a stream's head: no caching, no proxy buffering
bool swap_in_progress(const Door& d);  // a child is starting, draining or stopping (Door::phases)

// child_routes.cpp: llama-server routes the door checks, then forwards to a model's child.
// POST /slots/{id}?action=save|restore|erase: the model from ?model= or the body's `model`; a
// `filename` that could leave the child's slot folder is a 400 in llama-server's shape.
asio::awaitable<void> slot_action(Door& d, Request& req, Connection& c, const RouteMatch& m);
// GET/POST /cors-proxy: forwarded when the model's profile runs its child with --ui-mcp-proxy.
asio::awaitable<void> cors_proxy(Door& d, Request& req, Connection& c);
// child_metrics.cpp: the `llamacpp:*` metrics of every ready local child, labelled model="<child>"
// (Prometheus text; "" when none). Reads Door::child_endpoints with a short timeout: never a lease,
// so a scrape never starts, wakes or keeps a model.
asio::awaitable<std::string> child_metrics_text(Door& d);
// child_routes.cpp: GET/POST /tools, forwarded to the tools host (supervisor/tools_host.hpp);
// 404 when tools are off, 503 with Retry-After while the host starts or restarts.
asio::awaitable<void> tools_route(Door& d, Request& req, Connection& c);

// ollama.cpp: /api/* (Ollama's API, translated onto the child's OpenAI endpoints).
asio::awaitable<void> ollama_call(Door& d, Request& req, Connection& c, const RouteMatch& m);

// runs.cpp: pipeline runs, one task at a time, bounded by opt.runs (429 past it).
class RunQueue {
 public:
  explicit RunQueue(Door& d) : d_(d) {}
  ~RunQueue();
  asio::awaitable<void> post_run(Request& req, Connection& c, std::string name, bool async);
  asio::awaitable<void> get_run(Connection& c, const std::string& id);
  struct Run;  // one run's state (runs.cpp)
  struct Stats {
    std::size_t queued = 0;         // waiting or running
    std::int64_t queued_bytes = 0;  // their request bodies
    std::size_t kept = 0;           // runs remembered for GET /v1/runs/{id}
    std::int64_t kept_bytes = 0;    // finished records among them
    std::uint64_t refused = 0;      // 429s since start
  };
  const Stats& stats() const { return stats_; }  // for /status and /metrics

 private:
  std::optional<Reply> admit(const Request& req, const std::string& name);  // refusal or nullopt
  Status check_run(std::string_view body, const std::string& name) const;  // the body as a task of `name`
  asio::awaitable<void> work();
  void remember(std::shared_ptr<Run> r);
  void forget_old();
  Door& d_;
  Stats stats_;
  Ewma run_s_;  // recent run durations, for Retry-After
  std::deque<std::shared_ptr<Run>> pending_;
  std::map<std::string, std::shared_ptr<Run>> runs_;
  std::deque<std::string> order_;  // run ids, oldest first (bounded history)
  bool working_ = false;
  std::uint64_t next_ = 1;
};

// feed.cpp: the status page's extras (RequestNote: above Feed).
void note_request(Door& d, RequestNote&& n);
void note_run(Door& d, nlohmann::json run);  // a finished pipeline run (id, pipeline, verdict, ms)
// A door request's place in its model's load, published as coalesced `queue` events.
class ModelLoad {
 public:
  ModelLoad(Door& d, std::string model);  // waiting
  ~ModelLoad();
  void leased();  // waiting -> in flight
  ModelLoad(const ModelLoad&) = delete;
  ModelLoad& operator=(const ModelLoad&) = delete;

 private:
  Door& d_;
  std::string model_;
  int state_ = 0;  // 0 waiting, 1 in flight
};
nlohmann::json feed_status_json(const Door& d);  // /status extras: recent_requests, recent_runs, gpu
asio::awaitable<void> logs(Door& d, Connection& c, std::string model, std::string_view query);
// in_flight.cpp: a model call in progress, listed by GET /requests until it ends; an admin may
// cancel it (POST /admin/requests/{id}/cancel): `cancel` stops its wait or its child's generation
// and the client is told so in its API's shape.
class InFlight {
 public:
  InFlight(Door& d, RequestNote&& rec);  // registered in d.in_progress under a new id
  ~InFlight();
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  const std::uint64_t id;
  const Clock::time_point started = Clock::now();
  RequestNote rec;          // filled in as the call goes; noted when it ends
  bool leased = false;      // holds a lease: the child is generating
  bool cancelled = false;   // by an admin
  std::unique_ptr<activity::CaptureWriter> capture;  // captures on: the call's bodies, compressed as they pass
  const std::shared_ptr<upstream::CancelToken> cancel = std::make_shared<upstream::CancelToken>();

 private:
  Door& d_;
};
Error cancelled_error(std::uint64_t id);  // what the client of a cancelled call gets
nlohmann::json in_flight_json(const Door& d);  // GET /requests
asio::awaitable<void> cancel_request(Door& d, Connection& c, std::string_view id);

// activity.cpp: the request record's facts from the request, GET /activity, /status "activity".
activity::RecorderOptions history_options(const ServerOptions& opt);
RequestNote start_record(const Door& d, const Request& req, const Connection& c, std::string_view api);
asio::awaitable<void> activity_route(Door& d, const Request& req, Connection& c, std::string_view query);
nlohmann::json activity_status_json(const Door& d);
// A finished pipeline run's model calls (its journal record's attempts), one record each, with
// the run's id and each call's stage.
void note_pipeline_calls(Door& d, const std::string& run_id, const std::string& pipeline, const nlohmann::json& record);
// Captures on: keeps the call's request (headers redacted) and response bodies in Door::captures
// and links the record to them (me.rec.capture).
void keep_capture(Door& d, const Request& req, InFlight& me, int status);
// Captures on: the request body into me.capture, a slice per turn of the strand.
asio::awaitable<void> capture_request(Door& d, const Request& req, InFlight& me);
asio::awaitable<void> capture_route(Door& d, Connection& c, const std::string& id);
// ui.cpp: GET /ui[/<asset>] (embedded files, CSP, ETag) and the browser redirect of GET /.
Reply ui_reply(const Request& req, std::string_view path);
Reply redirect_to_ui();

// Small helpers shared by the route files.
std::string_view header(const Request& req, bhttp::field f);
std::string_view header(const Request& req, std::string_view name);
Reply json_reply(int status, const nlohmann::json& body, HeaderList headers = {});
inline auto ec_token(boost::system::error_code& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}

}  // namespace kevlaya::http
