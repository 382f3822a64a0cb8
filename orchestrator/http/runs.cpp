// Pipeline runs over REST: one task per run, executed strictly one at a time (FIFO), so the
// stages of two tasks never interleave. Finished runs are kept (bounded) for GET /v1/runs/{id}.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <random>

#include "http/detail.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

constexpr std::size_t kKeptRuns = 1000;

std::string run_prefix() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return buf;
}

// Plain functions: GCC 12 rejects some braced string-literal initialisers inside coroutines.
Reply accepted_reply(const json& run, const std::string& id) {
  return json_reply(202, run, {{"Location", "/v1/runs/" + id}});
}

Reply record_reply(const json& record, const std::string& id) {
  return json_reply(200, record, {{"X-Kevlaya-Run", id}});
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
  json task;
  State state = State::queued;
  json record;
  std::optional<Error> error;
  std::chrono::system_clock::time_point created = std::chrono::system_clock::now();
  asio::steady_timer finished;  // cancelled when the run ends

  json to_json() const {
    static constexpr const char* kNames[] = {"queued", "running", "done", "failed"};
    json j = {{"id", id}, {"pipeline", pipeline}, {"status", kNames[static_cast<int>(state)]}};
    if (state == State::done) j["record"] = record;
    if (error) j["error"] = error_json(*error)["error"];
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
  return record_reply(run.record, run.id);
}

void finish(Metrics& m, RunQueue::Run& run, Result<json> res) {
  std::string verdict = "error";
  if (res) {
    run.record = std::move(res.value());
    run.state = RunQueue::Run::State::done;
    const auto v = run.record.find("verdict");
    verdict = v != run.record.end() && v->is_string() ? v->get<std::string>() : "unknown";
  } else {
    run.error = res.error();
    run.state = RunQueue::Run::State::failed;
  }
  count_verdict(m, run.pipeline, verdict);
}

}  // namespace

RunQueue::~RunQueue() = default;

asio::awaitable<void> RunQueue::post_run(Request& req, Connection& c, std::string name, bool async) {
  if (!d_.cfg.find_pipeline(name)) {
    co_await c.send(unknown_pipeline(d_.cfg, name));
    co_return;
  }
  if (!d_.runner) {
    co_await c.send(error_reply(make_error(Errc::unavailable, "pipelines are not enabled in this server")));
    co_return;
  }
  json task = json::parse(req.body(), nullptr, false);
  if (task.is_discarded() || !task.is_object() || !task.contains("input")) {
    co_await c.send(error_reply(make_error(
        Errc::bad_request, "body must be a JSON object with \"input\" (and optional \"candidates\")")));
    co_return;
  }
  static const std::string prefix = run_prefix();
  auto run = std::make_shared<Run>(d_.strand);
  run->id = "run-" + prefix + "-" + std::to_string(next_++);
  run->pipeline = std::move(name);
  run->task = std::move(task);
  run->finished.expires_at(Clock::time_point::max());
  remember(run);
  pending_.push_back(run);
  if (!working_) {
    working_ = true;
    asio::co_spawn(d_.strand, work(), [](std::exception_ptr e) {
      if (e) spdlog::error("http: pipeline worker stopped by an internal error");
    });
  }
  if (async) {
    co_await c.send(accepted_reply(run->to_json(), run->id));
    co_return;
  }
  boost::system::error_code ec;
  while (run->state == Run::State::queued || run->state == Run::State::running)
    co_await run->finished.async_wait(ec_token(ec));
  co_await c.send(finished_reply(*run));
}

asio::awaitable<void> RunQueue::get_run(Connection& c, const std::string& id) {
  auto it = runs_.find(id);
  co_await c.send(run_reply(it == runs_.end() ? nullptr : it->second.get(), id));
}

void RunQueue::remember(std::shared_ptr<Run> r) {
  order_.push_back(r->id);
  runs_[r->id] = std::move(r);
  while (order_.size() > kKeptRuns) {  // forget the oldest finished runs first
    auto old = runs_.find(order_.front());
    if (old != runs_.end() && (old->second->state == Run::State::queued ||
                               old->second->state == Run::State::running))
      break;
    if (old != runs_.end()) runs_.erase(old);
    order_.pop_front();
  }
}

asio::awaitable<void> RunQueue::work() {
  while (!pending_.empty()) {
    auto run = pending_.front();
    pending_.pop_front();
    run->state = Run::State::running;
    auto res = co_await d_.runner->run_task(run->pipeline, run->task);
    finish(d_.metrics, *run, std::move(res));
    run->finished.cancel();
  }
  working_ = false;
}

}  // namespace kevlaya::http
