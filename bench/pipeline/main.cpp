// Pipeline batching benchmark: 50 decide->verify tasks on two stand-in children that each take
// 1 s to load, run by `kevlaya-orch run` stage-major and task-major side by side. Prints switches
// and wall time of both and their ratios; exits 1 if stage-major is not >= 10x fewer switches and
// >= 5x less wall time.  Usage: kevlaya_bench_pipeline [TASKS] [LOAD_MS]
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Outcome {
  int rc = -1;
  std::string out;
};

Outcome sh(const std::string& cmd) {
  Outcome o;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return o;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) o.out.append(buf.data(), n);
  const int st = ::pclose(f);
  o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* kPipeline = R"(name: bench
max_rounds: 2
stages:
  - name: decide
    model: kev
    user: "Situation: {{input}} Feedback: {{verify.feedback}}"
    sampling: {max_tokens: 8}
    output: {choices: [cache, retry, escalate, abort]}
  - name: verify
    model: laya
    user: "Situation: {{input}} Chosen: {{decide.output}}"
    sampling: {max_tokens: 64}
    output:
      json_schema:
        type: object
        properties: {verdict: {type: string, enum: [pass, reject]}, reason: {type: string}}
        required: [verdict, reason]
)";

void setup(const fs::path& dir, int tasks, int load_ms) {
  if (!fs::exists(dir / "models/laya-tiny.gguf"))
    sh(std::string(KEVLAYA_GGUF_TOOL_PATH) + " standins --dir " + (dir / "models").string() + " >/dev/null");
  // Every 10th task is rejected once, so the retry round is part of the measurement.
  json responses = json::array({
      {{"model", "laya"}, {"contains", "needs-a-retry Chosen: cache"},
       {"reply", R"({"verdict": "reject", "reason": "try again"})"}},
      {{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fine"})"}},
      {{"model", "kev"}, {"contains", "try again"}, {"reply", "retry"}},
      {{"model", "kev"}, {"reply", "cache"}},
  });
  write(dir / "responses.json", responses.dump());
  write(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: log\n");
  for (const std::string name : {"kev", "laya"})
    write(dir / ("profiles/" + name + ".yaml"),
          "name: " + name + "\nbinary: " + KEVLAYA_STANDIN_PATH + "\nmodel: " + (dir / "models" / (name + "-tiny.gguf")).string() +
              "\nngl: 0\nctx: 512\nparallel: 1\nextra_args: [--responses, " + (dir / "responses.json").string() +
              ", --fake-load-ms, \"" + std::to_string(load_ms) + "\"]\n");
  write(dir / "pipelines/bench.yaml", kPipeline);
  std::string lines;
  for (int i = 1; i <= tasks; ++i)
    lines += json{{"id", "t" + std::to_string(i)},
                  {"input", "case " + std::to_string(i) + (i % 10 == 0 ? " needs-a-retry" : "")}}.dump() + "\n";
  write(dir / "tasks.jsonl", lines);
}

json run(const fs::path& dir, const std::string& order) {
  fs::remove(dir / ("out-" + order + ".jsonl"));
  auto o = sh("cd " + dir.string() + " && " + KEVLAYA_ORCH_PATH +
              " run pipelines/bench.yaml --config kevlaya.yaml --input-file tasks.jsonl --output out-" + order +
              ".jsonl --order " + order + " --json 2>/dev/null");
  if (o.rc != 0) {
    std::cerr << order << ": kevlaya-orch run exited " << o.rc << "\n" << o.out << "\n";
    std::exit(1);
  }
  return json::parse(o.out);
}

}  // namespace

int main(int argc, char** argv) {
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 50;
  const int load_ms = argc > 2 ? std::atoi(argv[2]) : 1000;
  const fs::path dir = fs::temp_directory_path() / ("kevlaya-bench-pipeline-" + std::to_string(::getpid()));
  setup(dir, tasks, load_ms);
  const json s = run(dir, "stage-major");
  const json t = run(dir, "task-major");
  fs::remove_all(dir);

  const double sw_ratio = t["switches"].get<double>() / std::max(1, s["switches"].get<int>());
  const double wall_ratio = t["wall_s"].get<double>() / std::max(1e-9, s["wall_s"].get<double>());
  std::printf("pipeline batching: %d tasks (every 10th rejected once), child load %d ms\n", tasks, load_ms);
  std::printf("  %-12s %9s %10s %9s %9s\n", "order", "switches", "wall_s", "accepted", "rejected");
  for (const auto& [name, j] : {std::pair{"stage-major", s}, std::pair{"task-major", t}})
    std::printf("  %-12s %9d %10.2f %9d %9d\n", name, j["switches"].get<int>(), j["wall_s"].get<double>(),
                j["accepted"].get<int>(), j["rejected"].get<int>());
  std::printf("  ratio task-major / stage-major: switches %.1fx, wall time %.1fx\n", sw_ratio, wall_ratio);
  const bool ok = sw_ratio >= 10.0 && wall_ratio >= 5.0;
  std::printf("  target: >= 10x fewer switches, >= 5x less wall time: %s\n", ok ? "met" : "NOT MET");
  return ok ? 0 : 1;
}
