// `kevlaya-orch run PIPELINE.yaml (--input TEXT | --input-file tasks.jsonl) [--output results.jsonl]`:
// runs decide->verify tasks serially through the supervisor, journals each finished task
// (fsync'ed), batches stage-major by default, and prints a summary. Exit codes: 0 every task
// finished (any verdict), 2 some ended in `error`, 1 the run could not start, 130 interrupted.
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/pipeline_session.hpp"
#include "runtime/runtime.hpp"
#include "cli/eval_scores.hpp"
#include "cli/summary_table.hpp"
#include "common/bytes.hpp"
#include "pipeline/journal.hpp"
#include "pipeline/tasks.hpp"

namespace kevlaya::cli {
namespace {

namespace asio = boost::asio;
namespace pl = kevlaya::pipeline;
using nlohmann::json;

constexpr std::size_t kListTasksUpTo = 20;  // the summary lists each task for small runs

struct RunArgs {
  std::string pipeline;
  std::string config;
  std::string input;
  std::vector<std::string> candidates;
  std::string input_file;
  std::string output;
  bool resume = false;
  bool strict = false;
  std::string order = "stage-major";
  bool json = false;
};

struct TaskLine {
  std::string id, verdict, decision, expected, error;
  int rounds = 0;
};

int fail(const Error& e) {  // messages may quote task lines or child output
  std::cerr << "kevlaya-orch run: " << printable(e.message) << "\n";
  if (!e.hint.empty()) std::cerr << "  hint: " << printable(e.hint) << "\n";
  for (const auto& l : e.detail) std::cerr << "  | " << printable(l) << "\n";
  return kExitFailure;
}

// The tasks to run: from --input or --input-file; bad lines reported (or fatal with --strict).
Result<std::vector<pl::Task>> gather_tasks(const RunArgs& a) {
  if (!a.input.empty()) {
    pl::Task t;
    t.id = "input";
    t.input = a.input;
    if (!a.candidates.empty()) t.candidates = a.candidates;
    return std::vector<pl::Task>{t};
  }
  auto list = pl::load_tasks(a.input_file, a.strict);
  if (!list) return list.error();  // --strict: every issue is in the error's detail
  for (const auto& issue : list->issues) std::cerr << printable(issue.format(a.input_file)) << " (skipped)\n";
  if (!list->issues.empty())
    std::cerr << list->issues.size() << " bad input line(s) skipped; --strict makes them fatal\n";
  return std::move(list->tasks);
}

// Only when the tasks carry the right answer (`expected`): how often the pipeline and Kev alone got it.
void print_accuracy(std::ostream& out, const DecisionScores& d) {
  if (!d.pipeline_correct.of) return;
  auto pct = [](const Ratio& r) {
    return std::to_string(r.hit) + "/" + std::to_string(r.of) + " (" + std::to_string(std::lround(100 * r.rate())) + "%)";
  };
  out << "accuracy vs expected: pipeline " << pct(d.pipeline_correct) << ", decide stage alone (round 1) "
      << pct(d.kev_correct);
  if (d.caught.of || d.false_reject.of)
    out << "; verifier rejected " << pct(d.caught) << " wrong and " << pct(d.false_reject) << " right decisions";
  out << "\n";
}

void print_summary(std::ostream& out, const RunArgs& a, const pl::RunSummary& s,
                   const std::vector<TaskLine>& lines, std::size_t skipped, const DecisionScores& scores) {
  if (lines.size() <= kListTasksUpTo) {  // task data may hold any bytes: printable() before the terminal
    std::vector<std::vector<std::string>> rows;
    for (const auto& l : lines) {
      std::string rest = l.decision.empty() ? "" : "decision " + printable(l.decision) + " ";
      if (!l.expected.empty()) rest += (l.expected == l.decision ? "right " : "WRONG, expected " + printable(l.expected) + " ");
      rest += "(" + std::to_string(l.rounds) + (l.rounds == 1 ? " round)" : " rounds)");
      if (!l.error.empty()) rest += "  " + printable(l.error);
      rows.push_back({printable(l.id), printable(l.verdict), rest});
    }
    out << format_columns(rows, {false, false, false});
  }
  out << "summary: " << s.total << " task(s) in " << format_duration(s.wall_s) << ": accepted " << s.accepted
      << ", rejected " << s.rejected << ", error " << s.errors;
  if (s.unfinished) out << ", unfinished " << s.unfinished;
  if (skipped) out << " (" << skipped << " already in the journal)";
  out << "; switches " << s.switches << " (" << a.order << ")\n";
  print_accuracy(out, scores);
  out << stage_table(s);
  if (!a.output.empty()) out << "journal: " << a.output << "\n";
  if (s.interrupted) out << "interrupted; rerun with --resume to finish the remaining tasks\n";
  out.flush();
}

// Opens the journal and drops tasks it already completed (--resume).
Result<std::optional<pl::Journal>> open_journal(const RunArgs& a, std::vector<pl::Task>& tasks, std::size_t& skipped) {
  if (a.output.empty()) return std::optional<pl::Journal>{};
  auto j = pl::Journal::open(a.output, a.resume ? pl::Journal::Mode::resume : pl::Journal::Mode::create);
  if (!j) return j.error();
  if (j->dropped_torn_line()) std::cerr << a.output << ": dropped a torn last line (a crash mid-write)\n";
  const auto& done = j->completed();
  const auto before = tasks.size();
  std::erase_if(tasks, [&](const pl::Task& t) { return done.count(t.id) > 0; });
  skipped = before - tasks.size();
  return std::optional<pl::Journal>(std::move(*j));
}

TaskLine task_line(const json& r) {
  TaskLine l;
  l.id = r.value("id", "");
  l.verdict = r.value("verdict", "");
  l.rounds = r.value("rounds", 0);
  if (r.contains("decision") && r["decision"].is_string()) l.decision = r["decision"].get<std::string>();
  if (r.contains("error") && r["error"].is_object()) l.error = r["error"].value("message", "");
  const auto& vars = r.value("vars", json::object());
  if (vars.contains("expected") && vars["expected"].is_string()) l.expected = vars["expected"].get<std::string>();
  return l;
}

int run_pipeline(const RunArgs& a) {
  std::ostream& out = a.json ? std::cerr : std::cout;  // --json keeps stdout for the JSON summary
  if (a.input.empty() == a.input_file.empty()) {
    std::cerr << "kevlaya-orch run: give exactly one of --input or --input-file\n";
    return kExitFailure;
  }
  if (a.resume && a.output.empty()) {
    std::cerr << "kevlaya-orch run: --resume needs --output (the journal to resume)\n";
    return kExitFailure;
  }
  auto lp = load_pipeline(a.pipeline, a.config, std::cerr);
  if (!lp) return fail(lp.error());
  print_binaries(lp->config, lp->pipeline.stages, out);
  auto tasks = gather_tasks(a);
  if (!tasks) return fail(tasks.error());
  // Before the journal: a refused start (state_dir in use, plan refused) leaves no file behind.
  auto rt = runtime::Runtime::open(lp->config);
  if (!rt) return fail(rt.error());
  auto& session = **rt;
  std::size_t skipped = 0;
  auto journal = open_journal(a, *tasks, skipped);
  if (!journal) return fail(journal.error());

  pl::ExecOptions opts;
  opts.order = a.order == "task-major" ? pl::Order::task_major : pl::Order::stage_major;
  pl::Executor exec(session.executor(), session.sup(), lp->pipeline, opts);
  ProgressPrinter progress("run " + lp->pipeline.name);
  std::vector<TaskLine> lines;
  DecisionScores scores;
  exec.on_task_done([&](const json& rec) -> Status {
    if (*journal)
      if (auto st = (*journal)->append(rec); !st) return st;  // not durable: not listed, not counted
    lines.push_back(task_line(rec));
    scores.add(rec.value("id", ""), rec);
    return ok_status();
  });
  exec.on_progress([&](const pl::RunProgress& p) { progress.update(p); });
  auto printing = session.sup().subscribe([&](const supervisor::Event& e) {  // the executor records its own
    if (e.type != supervisor::Event::Type::switch_done) return;
    const auto& r = e.record;
    progress.note("switch " + (r.from.empty() ? std::string("-") : r.from) + " -> " + r.to + " (" +
                  std::to_string(r.total_ms) + " ms)" + (r.ok ? "" : " FAILED: " + printable(r.error)));
  });
  session.on_first_signal([&] {
    std::cerr << "\ninterrupted: abandoning the call in flight and stopping children (again to kill)..." << std::endl;
    exec.stop();
  });
  pl::RunSummary sum;
  const bool interrupted = session.run([&]() -> asio::awaitable<void> { sum = co_await exec.run(std::move(*tasks)); });
  progress.finish();
  print_summary(out, a, sum, lines, skipped, scores);
  if (a.json) std::cout << dump_json(sum.to_json(), 2) << std::endl;
  if (sum.fatal) return fail(*sum.fatal);
  if (interrupted || sum.interrupted) return kExitInterrupted;
  return sum.errors > 0 ? kExitPartial : kExitOk;
}

}  // namespace

void add_run(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand("run", "run a decide->verify pipeline over tasks (journaled, batched)");
  sub->add_option("pipeline", a->pipeline, "pipeline YAML file (or pipeline name)")->required();
  sub->add_option("--config", a->config, "orchestrator config (default: ./kevlaya.yaml if present)");
  sub->add_option("--input", a->input, "one task's input text");
  sub->add_option("--candidates", a->candidates, "candidates for --input (comma-separated)")->delimiter(',');
  sub->add_option("--input-file", a->input_file, "tasks as JSONL: {\"id\", \"input\", \"candidates\"?, ...}");
  sub->add_option("--output", a->output, "journal: one JSON record per finished task (fsync'ed)");
  sub->add_flag("--resume", a->resume, "skip tasks already finished in --output, append the rest");
  sub->add_flag("--strict", a->strict, "fail on any bad input line instead of skipping it");
  sub->add_option("--order", a->order, "stage-major (fewest switches) or task-major")
      ->check(CLI::IsMember({"stage-major", "task-major"}));
  sub->add_flag("--json", a->json, "print the summary as JSON on stdout");
  sub->callback([&g, a] {
    use_stderr_logger(g.log_level);  // keep stdout for results
    g.exit_code = run_pipeline(*a);
  });
}

}  // namespace kevlaya::cli
