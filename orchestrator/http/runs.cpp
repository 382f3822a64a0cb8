// Pipeline runs over REST: one task per run, executed strictly one at a time (FIFO), so the
// stages of two tasks never interleave. Finished runs are kept (bounded) for GET /v1/runs/{id}.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include <cmath>

#include "common/bounded_json.hpp"
#include "common/bytes.hpp"
#include "http/bodies.hpp"
#include "common/clock.hpp"
#include "common/random.hpp"
#include "http/detail.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

constexpr std::size_t kKeptRuns = 1000;

// Plain functions: GCC 12 rejects some braced string-literal initialisers inside coroutines.
Reply accepted_reply(const json& run, const std::string& id) {
  return json_reply(202, run, {{"Location", "/v1/runs/" + id}});
}

Reply record_reply(const std::string& record_text, const std::string& id) {
  Reply r;
  r.body = record_text;  // kept serialized: sent as is
  r.headers = {{"X-Kevlaya-Run", id}};
  return r;
}

void count_verdict(Metrics& m, const std::string& pipeline, const std::string& verdict) {
  m.inc("kevlaya_pipeline_verdicts_total", {{"pipeline", pipeline}, {"verdict", verdict}});
}

}  // namespace

struct RunQueue::Run {
  explicit Run(Strand s) : finished(std::move(s)) {}
  enum class State { queued, running, done, failed };
  std::string id;
  std::string pipeline;
  // Kept as text, not as parsed trees (several times the bytes): a queued body costs its size
  // (what runs.max_queued_bytes counts), a kept record its size (runs.max_kept_bytes).
  std::string body;         // the request body, validated; parsed again when the run starts
  State state = State::queued;
  std::string record_text;  // the record, serialized, once done
  std::string verdict;      // its "verdict" (metrics, the status page)
  std::optional<Error> error;
  std::chrono::system_clock::time_point created = std::chrono::system_clock::now();
  std::int64_t body_bytes = 0;  // counted in the queue's bytes until the run ends
  std::int64_t kept_bytes = 0;  // size of the kept record once finished
  asio::steady_timer finished;  // cancelled when the run ends

  json summary() const {  // without the record
    static constexpr const char* kNames[] = {"queued", "running", "done", "failed"};
    json j = {{"id", id}, {"pipeline", pipeline}, {"status", kNames[static_cast<int>(state)]}};
    if (error) j["error"] = error_json(*error)["error"];
    return j;
  }

  json to_json() const {
    json j = summary();
    if (state == State::done) {
      auto record = parse_json_bounded(record_text);  // our own serialization
      j["record"] = record ? std::move(record.value()) : json(record_text);
    }
    return j;
  }
};

namespace {

// Plain functions: GCC 12 double-destroys class temporaries of ?: inside coroutines and rejects
// some braced string-literal initialisers there.
Reply unknown_pipeline(const config::Config& cfg, const std::string& name) {
  std::string known;
  for (const auto& p : cfg.pipelines) known += (known.empty() ? "" : ", ") + p.name;
  if (known.empty()) known = "(none)";
  return error_reply(make_error(Errc::not_found, "unknown pipeline '" + name + "'; known: " + known));
}

Reply run_reply(const RunQueue::Run* run, const std::string& id) {
  if (!run) return error_reply(make_error(Errc::not_found, "unknown run '" + id + "'"));
  return json_reply(200, run->to_json());
}

Reply finished_reply(const RunQueue::Run& run) {
  if (run.error) return error_reply(*run.error);
  return record_reply(run.record_text, run.id);
}

void finish(Metrics& m, RunQueue::Run& run, Result<json> res) {
  std::string verdict = "error";
  if (res) {
    const auto v = res->find("verdict");
    verdict = v != res->end() && v->is_string() ? v->get<std::string>() : "unknown";
    run.verdict = verdict;
    run.record_text = dump_json(res.value());
    run.state = RunQueue::Run::State::done;
  } else {
    run.error = res.error();
    run.state = RunQueue::Run::State::failed;
  }
  count_verdict(m, run.pipeline, verdict);
}

// One finished run as the status page lists it.
json run_note(const RunQueue::Run& run, std::int64_t ms) {
  json j = run.summary();
  j["verdict"] = !run.verdict.empty() ? run.verdict : run.error ? "error" : "unknown";
  j["ms"] = ms;
  return j;
}

}  // namespace

RunQueue::~RunQueue() = default;

Status RunQueue::check_run(std::string_view body, const std::string& name) const {
  auto task = parse_run_body(body);
  if (!task) return task.error();
  return d_.runner->check_task(name, task.value());
}

std::optional<Reply> RunQueue::admit(const Request& req, const std::string& name) {
  if (!d_.cfg().find_pipeline(name)) return unknown_pipeline(d_.cfg(), name);
  if (!d_.runner)
    return error_reply(make_error(Errc::unavailable, "pipelines are not enabled in this server"));
  const auto& lim = d_.opt.runs;
  const auto bytes = static_cast<std::int64_t>(req.body().size());
  if (bytes > lim.max_queued_bytes)
    return error_reply(make_error(Errc::payload_too_large, "a run body may hold at most " +
                                  std::to_string(lim.max_queued_bytes) + " bytes (runs.max_queued_bytes)"));
  if (stats_.queued >= static_cast<std::size_t>(lim.max_queued) || stats_.queued_bytes + bytes > lim.max_queued_bytes) {
    ++stats_.refused;
    Error e = make_error(Errc::queue_full, "pipeline run queue is full (" + std::to_string(stats_.queued) +
                             " runs, " + std::to_string(stats_.queued_bytes) + " bytes queued; limits: runs.max_queued " +
                             std::to_string(lim.max_queued) + ", runs.max_queued_bytes " +
                             std::to_string(lim.max_queued_bytes) + ")");
    e.retry_after_s = std::max(1, static_cast<int>(std::ceil(run_s_.seeded ? run_s_.value : 1.0)));
    return error_reply(e);
  }
  return std::nullopt;
}

asio::awaitable<void> RunQueue::post_run(Request& req, Connection& c, std::string name, bool async) {
  if (auto refusal = admit(req, name)) co_return co_await c.reply(std::move(*refusal));
  const auto checked = check_run(req.body(), name);  // the same checks for sync and async, before a 202
  if (!checked) co_return co_await c.reply(error_reply(checked.error()));
  static const std::string prefix = random_hex(4);  // 8 hex digits per process
  auto run = std::make_shared<Run>(d_.strand);
  run->id = "run-" + prefix + "-" + std::to_string(next_++);
  run->pipeline = std::move(name);
  run->body = std::move(req.body());
  run->body_bytes = static_cast<std::int64_t>(run->body.size());
  run->finished.expires_at(Clock::time_point::max());
  ++stats_.queued;
  stats_.queued_bytes += run->body_bytes;
  remember(run);
  pending_.push_back(run);
  if (!working_) {
    working_ = true;
    asio::co_spawn(d_.strand, work(), [](std::exception_ptr e) {
      if (e) spdlog::error("http: pipeline worker stopped by an internal error");
    });
  }
  if (async) co_return co_await c.reply(accepted_reply(run->to_json(), run->id));
  // A client that hangs up while it waits is noticed at once: its socket is closed, not left in
  // CLOSE-WAIT until the run ends. The run goes on (GET /runs/{id} reads it).
  auto gone = std::make_shared<upstream::CancelToken>();
  gone->set_hook([run] { run->finished.cancel(); });
  c.watch_disconnect(gone);
  boost::system::error_code ec;
  while ((run->state == Run::State::queued || run->state == Run::State::running) && !gone->cancelled())
    co_await run->finished.async_wait(ec_token(ec));
  c.unwatch();
  gone->clear_hook();
  if (gone->cancelled()) co_return;
  co_await c.send(finished_reply(*run));
}

asio::awaitable<void> RunQueue::get_run(Connection& c, const std::string& id) {
  auto it = runs_.find(id);
  co_await c.send(run_reply(it == runs_.end() ? nullptr : it->second.get(), id));
}

void RunQueue::remember(std::shared_ptr<Run> r) {
  order_.push_back(r->id);
  runs_[r->id] = std::move(r);
  forget_old();
}

// Forgets the oldest finished runs while more than kKeptRuns are kept or their records exceed
// runs.max_kept_bytes; runs still queued or running are never forgotten.
void RunQueue::forget_old() {
  while (!order_.empty() && (order_.size() > kKeptRuns || stats_.kept_bytes > d_.opt.runs.max_kept_bytes)) {
    auto old = runs_.find(order_.front());
    if (old != runs_.end() && (old->second->state == Run::State::queued ||
                               old->second->state == Run::State::running))
      break;
    if (old != runs_.end()) {
      stats_.kept_bytes -= old->second->kept_bytes;
      runs_.erase(old);
    }
    order_.pop_front();
  }
  stats_.kept = runs_.size();
}

asio::awaitable<void> RunQueue::work() {
  while (!pending_.empty()) {
    auto run = pending_.front();
    pending_.pop_front();
    run->state = Run::State::running;
    const auto t0 = Clock::now();
    auto res = parse_run_body(run->body);  // checked at admission: parses again
    std::string().swap(run->body);
    if (res) res = co_await d_.runner->run_task(run->pipeline, std::move(res.value()));
    run_s_.add(std::chrono::duration<double>(Clock::now() - t0).count());
    if (res) note_pipeline_calls(d_, run->id, run->pipeline, res.value());  // one activity record per model call
    finish(d_.metrics, *run, std::move(res));
    note_run(d_, run_note(*run, ms_since(t0)));  // the status page's recent runs
    --stats_.queued;
    stats_.queued_bytes -= run->body_bytes;
    run->kept_bytes = static_cast<std::int64_t>(run->record_text.size());
    stats_.kept_bytes += run->kept_bytes;
    forget_old();
    run->finished.cancel();
  }
  working_ = false;
}

}  // namespace kevlaya::http
