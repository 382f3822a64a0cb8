// GET /events: the supervisor's event stream as Server-Sent Events. The door subscribes once;
// each event is turned into one JSON object (with a "type" field) and appended, on the door's
// strand, to every client's bounded buffer. A client that falls `events_buffer` events behind is
// dropped (its stream ends): the supervisor and the other clients never wait for it.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <spdlog/spdlog.h>

#include <cmath>
#include <deque>
#include <optional>

#include "http/detail.hpp"

namespace kevlaya::http {

using nlohmann::json;

constexpr const char* kRetryHint = "retry: 2000\n\n";  // reconnect after 2 s (EventSource)

struct EventClient {
  EventClient(Strand s, bool logs) : wake(std::move(s)), sees_logs(logs) {}
  std::deque<std::string> frames;  // SSE frames not yet written
  bool dropped = false;            // fell too far behind
  bool ended = false;              // the client left, or the door shuts down
  asio::steady_timer wake;         // cancelled when there is something to do
  bool sees_logs = false;          // its key may read log tails (auth.hpp: sees_logs)
  void end() {
    ended = true;
    wake.cancel();
  }
};

void drop_log_tails(json& j) {
  if (j.is_object()) j.erase("log_tail");
  if (j.is_structured())
    for (auto& v : j) drop_log_tails(v);  // an object's values, an array's elements
}

json failure_json(const supervisor::ChildFailure& f) {
  json j = {{"kind", supervisor::to_string(f.kind)}, {"message", f.message}, {"hint", f.hint}};
  if (f.exit_code >= 0) j["exit_code"] = f.exit_code;
  if (f.signal != 0) j["signal"] = f.signal;
  if (!f.log_tail.empty()) j["log_tail"] = f.log_tail;
  return j;
}

json switch_json(const supervisor::SwitchRecord& s) {
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(s.at.time_since_epoch());
  json j = {{"from", s.from}, {"to", s.to}, {"at_ms", at.count()}, {"ok", s.ok},
            {"phases_ms", {{"drain", s.drain_ms}, {"stop", s.stop_ms}, {"vram_wait", s.vram_wait_ms},
                           {"spawn_to_listening", s.spawn_to_listening_ms}, {"detect", s.detect_ms},
                           {"total", s.total_ms}, {"save", s.save_ms}, {"restore", s.restore_ms}}}};
  if (s.prefetch_resident_pct >= 0) j["prefetch_resident_pct"] = s.prefetch_resident_pct;  // docs/warm.md
  if (s.ahead) j["ahead"] = true;  // docs/supervisor.md, "Switch ahead"
  if (!s.reason.empty()) j["reason"] = s.reason;  // why `from` made room (docs/supervisor.md, "Cost-aware eviction")
  if (!s.ok) {
    j["error"] = s.error;
    j["failure"] = supervisor::to_string(s.failure);
    if (!s.log_tail.empty()) j["log_tail"] = s.log_tail;
  }
  return j;
}

json remote_json(const remote::Health& st) {
  json j = {{"url", st.url}, {"state", remote::to_string(st.state)}, {"last_error", nullptr}};
  if (!st.last_error.empty()) j["last_error"] = st.last_error;
  if (!st.checked_path.empty()) j["checked_path"] = st.checked_path;
  return j;
}

json remote_event_json(const std::string& model, const remote::Health& st, std::int64_t at_ms) {
  json j = {{"type", "remote"}, {"model", model}, {"state", remote::to_string(st.state)}, {"url", st.url},
            {"at_ms", at_ms}};
  if (!st.last_error.empty()) j["error"] = st.last_error;
  return j;
}

json event_json(const supervisor::Event& e) {
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(e.at.time_since_epoch());
  if (e.type == supervisor::Event::Type::switch_done) {
    json j = switch_json(e.record);
    j["type"] = "switch";
    return j;
  }
  if (e.type == supervisor::Event::Type::reload)
    return {{"type", "reload"}, {"changed", e.changed}, {"added", e.added}, {"removed", e.removed}, {"at_ms", at.count()}};
  if (e.type == supervisor::Event::Type::unload)
    return {{"type", "unload"}, {"model", e.child}, {"reason", e.reason}, {"at_ms", at.count()},
            {"stop_ms", e.stop.stop_ms}, {"vram_wait_ms", e.stop.vram_wait_ms}};
  if (e.type == supervisor::Event::Type::remote && e.remote) return remote_event_json(e.child, *e.remote, at.count());
  json j = {{"type", "phase"}, {"child", e.child}, {"from", supervisor::to_string(e.from)},
            {"to", supervisor::to_string(e.to)}, {"at_ms", at.count()}};
  if (e.failure) j["failure"] = failure_json(*e.failure);
  if (!e.gpus.empty()) j["gpus"] = e.gpus;  // the devices the child is placed on
  return j;
}

void on_event(const std::shared_ptr<Door>& dp, const supervisor::Event& e) {
  Door& d = *dp;
  if (e.type == supervisor::Event::Type::phase) {
    d.phases[e.child] = e.to;
    d.feed.since_ms[e.child] =
        std::chrono::duration_cast<std::chrono::milliseconds>(e.at.time_since_epoch()).count();
  } else if (e.type == supervisor::Event::Type::switch_done) {
    record_switch(dp, e.record);
  }
  if (d.event_clients.empty()) return;
  json j = event_json(e);
  if (e.type == supervisor::Event::Type::phase && e.to == supervisor::Phase::starting) {
    if (e.expected_load_s) j["eta_s"] = std::round(*e.expected_load_s * 10) / 10;  // the load expected
  }
  publish(d, j);
}

void publish(Door& d, const json& event) {
  if (d.event_clients.empty()) return;
  const std::string id = "id: " + std::to_string(d.next_event_id++) + "\ndata: ";
  const auto frame_of = [&id](const json& j) {
    return id + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  };
  const std::string frame = frame_of(event);
  std::optional<std::string> redacted;  // made once, for the clients that may not read log tails
  for (const auto& cl : d.event_clients) {
    if (cl->dropped || cl->ended) continue;
    if (cl->frames.size() >= d.opt.events_buffer) {
      cl->dropped = true;
      cl->frames.clear();
    } else if (cl->sees_logs) {
      cl->frames.push_back(frame);
    } else {
      if (!redacted) {
        json copy = event;
        drop_log_tails(copy);
        redacted = frame_of(copy);
      }
      cl->frames.push_back(*redacted);
    }
    cl->wake.cancel();
  }
}

void end_event_streams(Door& d) {
  for (const auto& cl : d.event_clients) cl->end();
}

namespace {

// Writes what is queued for `cl`, then waits for more (or a keep-alive tick). False when the
// stream must end.
asio::awaitable<bool> pump(Door& d, Connection& c, EventClient& cl) {
  while (!cl.frames.empty() && !cl.dropped && !cl.ended) {
    const std::string frame = std::move(cl.frames.front());
    cl.frames.pop_front();
    if (!co_await c.chunk(frame)) co_return false;
  }
  if (cl.dropped) {
    spdlog::warn("http: /events client dropped: more than {} events behind", d.opt.events_buffer);
    co_await c.chunk(": dropped: too slow (more than " + std::to_string(d.opt.events_buffer) +
                     " events behind)\n\n");
    co_return false;
  }
  if (cl.ended || d.draining) co_return false;
  boost::system::error_code ec;
  cl.wake.expires_after(d.opt.events_keepalive);
  co_await cl.wake.async_wait(ec_token(ec));
  if (!ec && cl.frames.empty()) co_return co_await c.chunk(": keep-alive\n\n");
  co_return true;
}

}  // namespace

asio::awaitable<void> events(Door& d, Connection& c) {
  auto cl = std::make_shared<EventClient>(d.strand, c.sees_logs());
  d.event_clients.insert(cl);
  auto gone = std::make_shared<upstream::CancelToken>();
  gone->set_hook([cl] { cl->end(); });  // runs on the door strand (the disconnect watcher's)
  HeaderList h = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  if (co_await c.start_stream(200, "text/event-stream", std::move(h)) && co_await c.chunk(kRetryHint)) {
    c.watch_disconnect(gone);
    while (co_await pump(d, c, *cl)) {
    }
    c.unwatch();
    co_await c.finish_stream();
  }
  gone->clear_hook();
  d.event_clients.erase(cl);
}

}  // namespace kevlaya::http
