#include "pipeline/executor.hpp"

#include <boost/asio/post.hpp>

#include <cstdio>
#include <map>

#include "common/clock.hpp"
#include "common/hash.hpp"
#include "common/bytes.hpp"
#include "pipeline/exec_call.hpp"
#include "pipeline/guard.hpp"
#include "pipeline/request.hpp"
#include "pipeline/template.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::pipeline {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::int64_t kSeedMask = 0x7fffffff;  // llama.cpp seeds are uint32; keep them positive

json error_json(const Error& e, const std::string& stage) {
  json j = {{"code", std::string(to_string(e.code))}, {"message", e.message}};
  if (!stage.empty()) j["stage"] = stage;
  if (!e.hint.empty()) j["hint"] = e.hint;
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

const char* verdict_name(TaskState s) {
  switch (s) {
    case TaskState::accepted: return "accepted";
    case TaskState::rejected: return "rejected";
    default: return "error";
  }
}

// What a finished or running task has accumulated.
struct TaskRun {
  Task task;
  TemplateContext ctx;
  json attempts = json::array();
  json switches = json::array();
  std::map<std::string, std::string> outputs;  // latest valid output per stage
  std::optional<json> error;
  Clock::time_point started{};
  bool begun = false;
  std::size_t stage_pos = 0;  // stages done in the current round (for the ETA)
};

}  // namespace

struct Executor::Impl {
  Impl(asio::any_io_executor ex, supervisor::Supervisor& sup, config::Pipeline p, ExecOptions o)
      : pipeline(std::move(p)), opts(o) {
    env.ex = ex;
    env.sup = &sup;
    env.call_timeout = opts.call_timeout;
  }

  config::Pipeline pipeline;
  ExecOptions opts;
  CallEnv env;
  TaskDone task_done;
  ProgressFn progress_fn;
  std::vector<TaskRun> runs;
  std::optional<Planner> planner;
  RunProgress progress;
  std::vector<StageTotals> totals;
  json pending_switches = json::array();
  std::size_t current = 0;  // task of the call in flight
  Clock::time_point t0{};
  std::optional<Error> fatal;
  std::shared_ptr<int> alive = std::make_shared<int>(0);  // posted switch records check it
  supervisor::Subscription switches;  // last member: unsubscribed first

  void note_switch(const supervisor::SwitchRecord& rec);

  std::int64_t seed_for(const TaskRun& r, const config::Stage& st, int round, int attempt) const;
  void emit_progress();
  void on_lease(const std::string& profile);
  json attempt_record(const config::Stage& st, int round, int attempt, std::int64_t seed,
                      const std::string& prompt_hash) const;
  void note_call(std::size_t stage, const CallResult& c, bool valid);
  asio::awaitable<std::optional<Outcome>> run_item(const WorkItem& item);
  asio::awaitable<std::optional<Outcome>> try_attempts(TaskRun& r, std::size_t stage_idx, int round,
                                                       const std::vector<ChatMessage>& messages);
  void finish(std::size_t task);
  json record(std::size_t task) const;
};

std::int64_t Executor::Impl::seed_for(const TaskRun& r, const config::Stage& st, int round, int attempt) const {
  // A pinned seed stays pinned on the first try; retries of invalid output need a different one.
  if (st.sampling.seed) return (*st.sampling.seed + attempt) & kSeedMask;
  const std::string key = r.task.id + '\x1f' + st.name + '\x1f' + std::to_string(round) + '\x1f' +
                          std::to_string(attempt);
  return static_cast<std::int64_t>(fnv1a(key)) & kSeedMask;
}

void Executor::Impl::emit_progress() {
  progress.elapsed_s = seconds_since(t0);
  // Remaining calls if every unfinished task passes in this round: a lower bound, good enough.
  std::size_t remaining = 0;
  for (std::size_t t = 0; t < runs.size(); ++t) {
    const auto s = planner->state(t);
    if (s == TaskState::pending || s == TaskState::running) remaining += pipeline.stages.size() - runs[t].stage_pos;
  }
  if (progress.calls > 0)
    progress.eta_s = progress.elapsed_s / static_cast<double>(progress.calls) * static_cast<double>(remaining);
  if (progress_fn) progress_fn(progress);
}

// Switches are counted and attributed when a call of this run is leased: one that no call of the
// run used (a switch ahead after its last call, scheduling.switch_ahead) is not the run's.
void Executor::Impl::on_lease(const std::string& profile) {
  progress.resident = profile;
  if (current < runs.size()) {
    progress.switches += static_cast<int>(pending_switches.size());
    for (auto& s : pending_switches) runs[current].switches.push_back(std::move(s));
  }
  pending_switches = json::array();
}

json Executor::Impl::attempt_record(const config::Stage& st, int round, int attempt, std::int64_t seed,
                                    const std::string& prompt_hash) const {
  return json{{"stage", st.name},  {"role", config::to_string(st.role)}, {"model", st.model},
              {"round", round},    {"attempt", attempt + 1},             {"seed", seed},
              {"prompt_hash", prompt_hash}};
}

void Executor::Impl::note_call(std::size_t stage, const CallResult& c, bool valid) {
  auto& t = totals[stage];
  ++t.calls;
  if (!valid) ++t.invalid;
  t.call_ms += c.call_ms;
  if (c.timings.is_object()) {
    t.predicted_n += c.timings.value("predicted_n", std::int64_t{0});
    t.predicted_ms += c.timings.value("predicted_ms", 0.0);
  }
}

// Up to 1 + max_invalid_retries calls; nullopt when every output was invalid or a call failed.
asio::awaitable<std::optional<Outcome>> Executor::Impl::try_attempts(TaskRun& r, std::size_t stage_idx,
                                                                     int round,
                                                                     const std::vector<ChatMessage>& messages) {
  const auto& st = pipeline.stages[stage_idx];
  json msgs = json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  const std::string prompt_hash = hex16(fnv1a(dump_json(msgs)));
  std::string last_invalid;
  for (int attempt = 0; attempt <= st.max_invalid_retries; ++attempt) {
    const auto seed = seed_for(r, st, round, attempt);
    auto body = chat_body(st, messages, seed, opts.constrain);
    if (!body) {
      r.error = error_json(body.error(), st.name);
      co_return std::nullopt;
    }
    json rec = attempt_record(st, round, attempt, seed, prompt_hash);
    progress.stage = st.name;
    auto call = co_await call_model(env, st.model, dump_json(*body));
    ++progress.calls;
    if (!call) {
      if (env.stopping) co_return std::nullopt;  // abandoned: the task stays unfinished
      rec["error"] = error_json(call.error(), st.name);
      r.attempts.push_back(std::move(rec));
      r.error = error_json(call.error(), st.name);
      co_return std::nullopt;
    }
    const GuardResult g = guard(st, call->content);
    note_call(stage_idx, *call, g.valid);
    rec.update(json{{"profile", call->profile}, {"raw", call->content}, {"valid", g.valid},
                    {"finish_reason", call->finish_reason}, {"timings", call->timings},
                    {"queue_ms", call->queue_ms}, {"switch_ms", call->switch_ms}, {"call_ms", call->call_ms}});
    if (call->usage.is_object())
      rec["tokens"] = {{"prompt", call->usage.value("prompt_tokens", 0)},
                       {"completion", call->usage.value("completion_tokens", 0)}};
    if (call->crash_retried) rec["crash_retry"] = call->crash_message;
    if (!g.valid) {
      rec["invalid_reason"] = g.invalid_reason;
      last_invalid = g.invalid_reason;
      r.attempts.push_back(std::move(rec));
      continue;
    }
    rec["output"] = g.output;
    if (g.json) rec["parsed"] = *g.json;
    if (g.verdict != Verdict::none) rec["verdict"] = g.verdict == Verdict::pass ? "pass" : "reject";
    r.attempts.push_back(std::move(rec));
    r.ctx.stages[st.name] = g.values();
    r.outputs[st.name] = g.output;
    if (g.verdict == Verdict::reject) {
      r.ctx.feedback_by_stage[st.name] = g.feedback;
      r.ctx.feedback = g.feedback;
      co_return Outcome::reject;
    }
    co_return Outcome::advance;
  }
  r.error = json{{"code", "invalid_output"}, {"stage", st.name},
                 {"message", "stage '" + st.name + "': no valid output after " +
                                 std::to_string(st.max_invalid_retries + 1) + " attempts (last: " + last_invalid + ")"}};
  co_return std::nullopt;
}

// nullopt: abandoned by stop() (the task stays unfinished and is not reported).
asio::awaitable<std::optional<Outcome>> Executor::Impl::run_item(const WorkItem& item) {
  auto& r = runs[item.task];
  current = item.task;
  if (!r.begun) {
    r.begun = true;
    r.started = Clock::now();
  }
  const auto& st = pipeline.stages[item.stage];
  auto messages = render_messages(st, r.ctx);
  if (!messages) {
    r.error = error_json(messages.error(), st.name);
    co_return Outcome::fail;
  }
  auto out = co_await try_attempts(r, item.stage, item.round, *messages);
  if (out) co_return out;
  if (!r.error && env.stopping) co_return std::nullopt;
  co_return Outcome::fail;
}

json Executor::Impl::record(std::size_t task) const {
  const auto& r = runs[task];
  json j = {{"id", r.task.id}, {"input", r.task.input}};
  if (r.task.candidates) j["candidates"] = *r.task.candidates;
  if (!r.task.vars.empty()) j["vars"] = r.task.vars;
  j["pipeline"] = pipeline.name;
  j["verdict"] = verdict_name(planner->state(task));
  j["rounds"] = planner->round(task);
  j["outputs"] = r.outputs;
  for (const auto& s : pipeline.stages)  // the decision: the first decide stage's final output
    if (s.role == config::StageRole::decide && r.outputs.count(s.name)) {
      j["decision"] = r.outputs.at(s.name);
      break;
    }
  j["attempts"] = r.attempts;
  j["switches"] = r.switches;
  j["error"] = r.error ? *r.error : json(nullptr);
  j["wall_ms"] = r.begun ? seconds_since(r.started) * 1e3 : 0.0;
  return j;
}

// Counts the task only once on_task_done has kept its record: after a failed journal write (disk
// full) the summary says what the journal holds, and the task is left unfinished for --resume.
void Executor::Impl::finish(std::size_t task) {
  const auto s = planner->state(task);
  if (s == TaskState::failed && !runs[task].error)
    runs[task].error = json{{"code", "internal"}, {"message", "task failed without an error"}};
  if (task_done) {
    if (auto st = task_done(record(task)); !st) {
      fatal = st.error();
      env.stopping = true;  // the journal is the product: stop rather than lose results
      return;
    }
  }
  ++progress.finished;
  if (s == TaskState::accepted) ++progress.accepted;
  else if (s == TaskState::rejected) ++progress.rejected;
  else ++progress.errors;
}

Executor::Executor(asio::any_io_executor ex, supervisor::Supervisor& sup, config::Pipeline pipeline,
                   ExecOptions opts)
    : impl_(std::make_unique<Impl>(std::move(ex), sup, std::move(pipeline), opts)) {
  impl_->env.on_lease = [impl = impl_.get()](const std::string& profile) { impl->on_lease(profile); };
  // Switch records arrive on the supervisor's strand; they are handled on `ex`, before the lease
  // that waited for the switch (the same executor receives both, in order).
  std::weak_ptr<int> alive = impl_->alive;
  impl_->switches = sup.subscribe([ex = impl_->env.ex, alive, impl = impl_.get()](const supervisor::Event& e) {
    if (e.type != supervisor::Event::Type::switch_done) return;
    asio::post(ex, [alive, impl, rec = e.record] {
      if (alive.lock()) impl->note_switch(rec);
    });
  });
}

Executor::~Executor() = default;

void Executor::on_task_done(TaskDone cb) { impl_->task_done = std::move(cb); }
void Executor::on_progress(ProgressFn cb) { impl_->progress_fn = std::move(cb); }

void Executor::Impl::note_switch(const supervisor::SwitchRecord& rec) {
  pending_switches.push_back({{"from", rec.from}, {"to", rec.to}, {"total_ms", rec.total_ms}, {"ok", rec.ok},
                                     {"save_ms", rec.save_ms}, {"restore_ms", rec.restore_ms},
                                     {"prefetch_resident_pct", rec.prefetch_resident_pct},  // docs/warm.md
                                     {"ahead", rec.ahead}});
}

void Executor::stop() {
  impl_->env.stopping = true;
  if (impl_->env.cancel) impl_->env.cancel->cancel();
}

asio::awaitable<RunSummary> Executor::run(std::vector<Task> tasks) {
  auto& m = *impl_;
  m.t0 = Clock::now();
  m.runs.clear();
  for (auto& t : tasks) {
    TaskRun r;
    r.ctx.input = t.input;
    r.ctx.candidates = t.candidates;
    r.ctx.vars = t.vars;
    r.task = std::move(t);
    m.runs.push_back(std::move(r));
  }
  m.planner.emplace(m.pipeline, m.runs.size(), m.opts.order);
  m.totals.clear();
  for (const auto& s : m.pipeline.stages) {
    auto& t = m.totals.emplace_back();
    t.stage = s.name;
    t.model = s.model;
  }
  m.progress = RunProgress{};
  m.progress.total = m.runs.size();
  m.emit_progress();
  std::string loaded;
  while (!m.env.stopping) {
    auto batch = m.planner->next_batch(loaded);
    if (batch.empty()) break;
    loaded = m.planner->model_of(batch.front());
    for (const auto& item : batch) {
      const auto out = co_await m.run_item(item);
      if (!out) break;  // interrupted: this item stays unfinished
      m.planner->complete(item, *out);
      m.runs[item.task].stage_pos = *out == Outcome::advance ? item.stage + 1 : 0;
      const auto s = m.planner->state(item.task);
      if (s != TaskState::pending && s != TaskState::running) m.finish(item.task);
      m.emit_progress();
      if (m.env.stopping) break;
    }
  }
  RunSummary sum;
  sum.total = m.runs.size();
  sum.accepted = m.progress.accepted;
  sum.rejected = m.progress.rejected;
  sum.errors = m.progress.errors;
  sum.unfinished = sum.total - m.progress.finished;
  sum.switches = m.progress.switches;
  sum.wall_s = seconds_since(m.t0);
  sum.interrupted = m.env.stopping && !m.fatal;
  sum.fatal = m.fatal;
  sum.stages = m.totals;
  co_return sum;
}

json RunSummary::to_json() const {
  json st = json::array();
  for (const auto& s : stages)
    st.push_back({{"stage", s.stage}, {"model", s.model}, {"calls", s.calls}, {"invalid", s.invalid},
                  {"call_ms", s.call_ms}, {"ms_per_call", s.calls ? s.call_ms / s.calls : 0.0},
                  {"predicted_tokens", s.predicted_n}, {"tokens_per_s", s.tokens_per_s()}});
  json j = {{"total", total},       {"accepted", accepted}, {"rejected", rejected},
            {"error", errors},      {"unfinished", unfinished}, {"switches", switches},
            {"wall_s", wall_s},     {"interrupted", interrupted}, {"stages", st}};
  if (fatal) j["fatal"] = error_json(*fatal, "");
  return j;
}

asio::awaitable<Result<json>> run_one(asio::any_io_executor ex, supervisor::Supervisor& sup,
                                      config::Pipeline pipeline, Task task) {
  ExecOptions opts;
  opts.order = Order::task_major;
  Executor exec(std::move(ex), sup, std::move(pipeline), opts);
  std::optional<json> rec;
  exec.on_task_done([&rec](const json& r) -> Status {
    rec = r;
    return ok_status();
  });
  std::vector<Task> tasks;
  tasks.push_back(std::move(task));
  co_await exec.run(std::move(tasks));
  if (!rec) co_return make_error(Errc::unavailable, "the pipeline run was interrupted");
  co_return std::move(*rec);
}

}  // namespace kevlaya::pipeline
