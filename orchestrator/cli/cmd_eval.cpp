// `kevlaya-orch eval PIPELINE.yaml --scenarios FILE --repeat N [--profiles a,b] [--min-stability X]`:
// runs every scenario N times (a different seed each time unless the stage pins one) and reports,
// per scenario, how stable the decision is, how often the verifier passes and how many outputs
// were invalid. --profiles swaps the decide stage's model for each listed profile in turn and
// prints them side by side; --variants swaps both models (e.g. one quantization per variant) and
// --constraint off|both also runs without the output grammar. When scenarios carry the right answer
// (`expected`), a per-variant table scores accuracy, consistency, schema-valid outputs and Laya
// (eval_scores.hpp). Exit 1 when any scenario is below --min-stability; 130 interrupted.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/eval_scores.hpp"
#include "cli/summary_table.hpp"
#include "cli/pipeline_session.hpp"
#include "runtime/runtime.hpp"
#include "common/bytes.hpp"
#include "pipeline/tasks.hpp"

namespace kevlaya::cli {
namespace {

namespace asio = boost::asio;
namespace pl = kevlaya::pipeline;
using nlohmann::json;

constexpr const char* kRepeatSep = "#";  // scenario id + "#" + repetition = the task id

struct EvalArgs {
  std::string pipeline;
  std::string config;
  std::string scenarios;
  int repeat = 5;
  double min_stability = -1;  // < 0: no bar
  std::vector<std::string> profiles;
  std::vector<std::string> variants;  // LABEL=DECIDE_PROFILE:VERIFY_PROFILE
  std::string constraint = "on";      // on | off | both
  bool json = false;
};

struct Variant {
  std::string label;
  config::Pipeline pipeline;
  bool constrain = true;
};

struct ScenarioStats {
  std::string id;
  int runs = 0;
  std::map<std::string, int> decisions;  // decision (or "(error)") -> count
  int verify_calls = 0;                  // valid verify outputs
  int verify_pass = 0;
  int invalid = 0;                       // outputs the guard refused
  int errors = 0;                        // runs that ended in error
  double stability() const {
    int top = 0;
    for (const auto& [d, n] : decisions) top = std::max(top, n);
    return runs ? static_cast<double>(top) / runs : 0.0;
  }
  double pass_rate() const { return verify_calls ? static_cast<double>(verify_pass) / verify_calls : 0.0; }
  std::string distribution() const {
    std::vector<std::pair<std::string, int>> v(decisions.begin(), decisions.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    std::string out;
    for (const auto& [d, n] : v) out += (out.empty() ? "" : " ") + d + ":" + std::to_string(n);
    return out;
  }
};

struct ProfileResult {
  std::string label;  // the decide profile ("" = as in the pipeline)
  bool constrain = true;
  std::vector<ScenarioStats> scenarios;
  DecisionScores scores;
  int switches = 0;
  pl::RunSummary summary;
};

void add_record(ScenarioStats& s, const json& rec) {
  ++s.runs;
  const std::string verdict = rec.value("verdict", "error");
  if (verdict == "error") ++s.errors;
  const std::string decision =
      rec.contains("decision") && rec["decision"].is_string() ? rec["decision"].get<std::string>() : "(error)";
  ++s.decisions[decision];
  for (const auto& at : rec.value("attempts", json::array())) {
    if (!at.value("valid", true)) ++s.invalid;
    if (at.value("role", "") == "verify" && at.contains("verdict")) {
      ++s.verify_calls;
      if (at["verdict"] == "pass") ++s.verify_pass;
    }
  }
}

std::vector<pl::Task> repeated(const std::vector<pl::Task>& scenarios, int n) {
  std::vector<pl::Task> out;
  for (const auto& s : scenarios)
    for (int r = 1; r <= n; ++r) {
      pl::Task t = s;
      t.id = s.id + kRepeatSep + std::to_string(r);  // a different id: a different seed
      out.push_back(std::move(t));
    }
  return out;
}

json report_json(const EvalArgs& a, const std::vector<ProfileResult>& results, bool ok) {
  json profiles = json::array();
  for (const auto& r : results) {
    json sc = json::array();
    for (const auto& s : r.scenarios)
      sc.push_back({{"id", s.id}, {"runs", s.runs}, {"decisions", s.decisions}, {"stability", s.stability()},
                    {"verify_pass_rate", s.pass_rate()}, {"verify_calls", s.verify_calls},
                    {"invalid_outputs", s.invalid}, {"errors", s.errors}});
    profiles.push_back({{"decide_profile", r.label}, {"variant", r.label}, {"constrained", r.constrain},
                        {"scores", r.scores.to_json()}, {"switches", r.switches}, {"scenarios", sc},
                        {"summary", r.summary.to_json()}});
  }
  json j = {{"repeat", a.repeat}, {"profiles", profiles}, {"ok", ok}};
  if (a.min_stability >= 0) j["min_stability"] = a.min_stability;
  return j;
}

void print_table(std::ostream& out, const std::vector<ProfileResult>& results) {
  constexpr int kId = 14, kNum = 7, kDist = 26;
  std::ostringstream h1, h2;
  h1 << std::left << std::setw(kId) << "scenario";
  h2 << std::left << std::setw(kId) << "";
  for (const auto& r : results) {
    h1 << "| " << std::left << std::setw(3 * kNum + 4 + kDist) << ("decide = " + r.label + (r.constrain ? "" : " (no grammar)"));
    h2 << "| " << std::right << std::setw(kNum) << "stable" << std::setw(kNum) << "pass" << std::setw(kNum)
       << "invalid" << "    " << std::left << std::setw(kDist) << "decisions";
  }
  out << h1.str() << "\n" << h2.str() << "\n";
  for (std::size_t i = 0; i < results.front().scenarios.size(); ++i) {
    out << std::left << std::setw(kId) << printable(results.front().scenarios[i].id);  // task data: any bytes
    for (const auto& r : results) {
      const auto& s = r.scenarios[i];
      out << "| " << std::right << std::fixed << std::setprecision(2) << std::setw(kNum) << s.stability()
          << std::setw(kNum) << std::setprecision(0) << (100 * s.pass_rate()) << "%"
          << std::setw(kNum - 1) << s.invalid << "    " << std::left << std::setw(kDist) << printable(s.distribution());
    }
    out << "\n";
  }
  out.flush();
}

// The pipeline with its decide (and, when non-empty, verify) stages on other profiles.
config::Pipeline with_models(config::Pipeline p, const std::string& decide, const std::string& verify) {
  for (auto& s : p.stages) {
    if (s.role == config::StageRole::decide && !decide.empty()) s.model = decide;
    if (s.role == config::StageRole::verify && !verify.empty()) s.model = verify;
  }
  return p;
}

std::string decide_model(const config::Pipeline& p) {
  for (const auto& s : p.stages)
    if (s.role == config::StageRole::decide) return s.model;
  return p.stages.empty() ? std::string() : p.stages.front().model;
}

// --profiles / --variants / --constraint -> the runs to make; an error message when one is bad.
Result<std::vector<Variant>> plan_variants(const EvalArgs& a, const config::Config& cfg, const config::Pipeline& p) {
  std::vector<Variant> base;
  auto known = [&](const std::string& prof, const char* option) -> Status {
    if (cfg.find_profile(prof)) return ok_status();
    return make_error(Errc::bad_request, "unknown profile '" + prof + "' in " + option);
  };
  for (const auto& prof : a.profiles) {
    if (auto st = known(prof, "--profiles"); !st) return st.error();
    base.push_back({prof, with_models(p, prof, ""), true});
  }
  for (const auto& v : a.variants) {
    const auto eq = v.find('='), colon = v.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || colon == std::string::npos || eq == 0)
      return make_error(Errc::bad_request, "--variants '" + v + "': expected LABEL=DECIDE_PROFILE:VERIFY_PROFILE");
    const std::string decide = v.substr(eq + 1, colon - eq - 1), verify = v.substr(colon + 1);
    for (const auto& prof : {decide, verify})  // empty: that stage keeps its model (or has none)
      if (auto st = prof.empty() ? ok_status() : known(prof, "--variants"); !st) return st.error();
    base.push_back({v.substr(0, eq), with_models(p, decide, verify), true});
  }
  if (base.empty()) base.push_back({decide_model(p), p, true});
  if (a.constraint == "on") return base;
  std::vector<Variant> out;
  for (const auto& v : base) {
    if (a.constraint == "both") out.push_back(v);
    out.push_back({v.label, v.pipeline, false});
  }
  return out;
}

std::string pct(const Ratio& r) {
  if (!r.of) return "-";
  std::ostringstream o;
  o << std::fixed << std::setprecision(0) << 100 * r.rate() << "% (" << r.hit << "/" << r.of << ")";
  return o.str();
}

// One row per variant: the decision-quality figures of eval_scores.hpp.
void print_scores(std::ostream& out, const std::vector<ProfileResult>& results) {
  std::vector<std::vector<std::string>> rows{{"variant", "grammar", "pipeline acc", "Kev acc", "consistency",
                                              "schema-valid", "Laya catch", "false reject", "switches"}};
  for (const auto& r : results) {
    const auto& s = r.scores;
    rows.push_back({printable(r.label), r.constrain ? "on" : "off", pct(s.pipeline_correct), pct(s.kev_correct),
                    pct(s.consistency), pct(s.schema_valid), pct(s.caught), pct(s.false_reject),
                    std::to_string(r.switches)});
  }
  out << format_columns(rows, {false, false, true, true, true, true, true, true, true});
}

int run_eval(const EvalArgs& a) {
  std::ostream& out = a.json ? std::cerr : std::cout;
  auto lp = load_pipeline(a.pipeline, a.config, std::cerr);
  if (!lp) return fail_with("eval", lp.error());
  auto variants = plan_variants(a, lp->config, lp->pipeline);
  if (!variants) return fail_with("eval", variants.error());
  std::vector<config::Stage> all_stages;
  for (const auto& v : *variants) all_stages.insert(all_stages.end(), v.pipeline.stages.begin(), v.pipeline.stages.end());
  print_binaries(lp->config, all_stages, out);
  auto scen = pl::load_tasks(a.scenarios, true);
  if (!scen) {
    std::cerr << "kevlaya-orch eval: " << printable(scen.error().message) << "\n";
    for (const auto& d : scen.error().detail) std::cerr << printable(d) << "\n";
    return kExitFailure;
  }
  if (scen->tasks.empty()) {
    std::cerr << "kevlaya-orch eval: " << a.scenarios << " has no scenarios\n";
    return kExitFailure;
  }

  auto rt = runtime::Runtime::open(lp->config);
  if (!rt) return fail_with("eval", rt.error());
  auto& session = **rt;
  std::vector<ProfileResult> results;
  pl::Executor* current = nullptr;
  int switches = 0;  // each executor subscribes for its own records; this counts them all
  auto counting = session.sup().subscribe([&](const supervisor::Event& e) {
    if (e.type == supervisor::Event::Type::switch_done) ++switches;
  });
  session.on_first_signal([&] {
    std::cerr << "\ninterrupted: abandoning the call in flight and stopping children (again to kill)..." << std::endl;
    if (current) current->stop();
  });
  const bool interrupted = session.run([&]() -> asio::awaitable<void> {
    for (const auto& variant : *variants) {
      if (session.interrupted()) break;  // a signal between two variants: the next one never starts
      pl::ExecOptions opts;
      opts.constrain = variant.constrain;
      pl::Executor exec(session.executor(), session.sup(), variant.pipeline, opts);
      current = &exec;
      ProfileResult res;
      res.label = variant.label;
      res.constrain = variant.constrain;
      const int switches_before = switches;
      std::map<std::string, std::size_t> index;
      for (const auto& s : scen->tasks) {
        index[s.id] = res.scenarios.size();
        res.scenarios.emplace_back().id = s.id;
      }
      exec.on_task_done([&](const json& rec) -> Status {
        const std::string id = rec.value("id", "");
        const std::string scenario = id.substr(0, id.rfind(kRepeatSep));
        add_record(res.scenarios[index.at(scenario)], rec);
        res.scores.add(scenario, rec);
        return ok_status();
      });
      ProgressPrinter progress("eval " + variant.label + (variant.constrain ? "" : " (no grammar)"));
      exec.on_progress([&](const pl::RunProgress& p) { progress.update(p); });
      res.summary = co_await exec.run(repeated(scen->tasks, a.repeat));
      progress.finish();
      current = nullptr;
      res.scores.finish();
      res.switches = switches - switches_before;
      const bool stop = res.summary.interrupted;
      results.push_back(std::move(res));
      if (stop) break;
    }
  });
  if (interrupted || results.empty() || results.back().summary.interrupted) {
    std::cerr << "kevlaya-orch eval: interrupted\n";
    return kExitInterrupted;
  }
  bool ok = true;
  for (const auto& r : results)
    for (const auto& s : r.scenarios)
      if (a.min_stability >= 0 && s.stability() < a.min_stability) ok = false;
  out << "eval " << lp->pipeline.name << ": " << scen->tasks.size() << " scenario(s) x " << a.repeat
      << " run(s), " << switches << " switch(es)\n";
  print_table(out, results);
  print_scores(out, results);
  if (!ok) out << "stability below --min-stability " << a.min_stability << "\n";
  if (a.json) std::cout << dump_json(report_json(a, results, ok), 2) << std::endl;
  return ok ? kExitOk : kExitFailure;
}

}  // namespace

void add_eval(CLI::App& app, Globals& g) {
  auto a = std::make_shared<EvalArgs>();
  auto* sub = app.add_subcommand("eval", "run scenarios N times: decision stability, verifier pass rate");
  sub->add_option("pipeline", a->pipeline, "pipeline YAML file (or pipeline name)")->required();
  sub->add_option("--scenarios", a->scenarios, "scenarios as JSONL (the task format of `run`)")->required();
  sub->add_option("--repeat", a->repeat, "runs per scenario (default 5)")->check(CLI::Range(1, 100000));
  sub->add_option("--config", a->config, "orchestrator config (default: ./kevlaya.yaml if present)");
  sub->add_option("--min-stability", a->min_stability, "exit 1 when a scenario's stability is below this")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--profiles", a->profiles, "decide-stage profiles to compare (comma-separated)")->delimiter(',');
  sub->add_option("--variants", a->variants, "LABEL=DECIDE_PROFILE:VERIFY_PROFILE,... (e.g. one per quantization)")
      ->delimiter(',');
  sub->add_option("--constraint", a->constraint, "output grammar: on (default), off, or both (each variant twice)")
      ->check(CLI::IsMember({"on", "off", "both"}));
  sub->add_flag("--json", a->json, "print the report as JSON on stdout");
  sub->callback([&g, a] {
    use_stderr_logger(g.log_level);
    g.exit_code = run_eval(*a);
  });
}

}  // namespace kevlaya::cli
