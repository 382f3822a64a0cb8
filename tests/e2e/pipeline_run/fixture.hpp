// A throwaway project for `kevlaya-orch run/eval` against the stand-in server: kevlaya.yaml,
// kev/laya profiles (tiny GGUFs, scripted answers), a decide->verify pipeline, task files.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"

namespace kevlaya::test {

// Tiny kev/laya models, written once per test process.
inline const std::filesystem::path& tiny_models() {
  static const std::filesystem::path dir = [] {
    auto d = binary_dir() / "pipeline_run_models";
    if (!std::filesystem::exists(d / "laya-tiny.gguf")) {
      auto r = run_command(tiny_gguf_tool().string() + " standins --dir " + d.string());
      if (r.exit_code != 0) throw std::runtime_error("kevlaya-tiny-gguf failed: " + r.output);
    }
    return d;
  }();
  return dir;
}

// A decide->verify pipeline like pipelines/decide-verify.yaml (small max_tokens, fast retries).
inline std::string dv_pipeline(int max_rounds = 3, int max_invalid_retries = 2) {
  return "name: dv\nmax_rounds: " + std::to_string(max_rounds) +
         "\nstages:\n"
         "  - name: decide\n    model: kev\n"
         "    max_invalid_retries: " + std::to_string(max_invalid_retries) + "\n"
         "    system: Answer with one word.\n"
         "    user: |\n      Situation: {{input}}\n      Candidates: {{candidates}}\n"
         "      Feedback: {{verify.feedback}}\n"
         "    sampling: {temperature: 0.1, max_tokens: 8}\n"
         "    output:\n      choices: [cache, retry, escalate, abort]\n"
         "  - name: verify\n    model: laya\n"
         "    system: Reply with JSON.\n"
         "    user: |\n      Situation: {{input}}\n      Chosen strategy: {{decide.output}}\n"
         "    sampling: {temperature: 0.1, max_tokens: 64}\n"
         "    output:\n      json_schema:\n        type: object\n"
         "        properties:\n          verdict: {type: string, enum: [pass, reject]}\n"
         "          reason: {type: string}\n        required: [verdict, reason]\n"
         "    pass_value: pass\n";
}

struct RunProject {
  TempDir dir{"pipeline_run"};

  // `extra` = extra_args per profile (e.g. {"kev", "--fake-crash-after 2"}); `binary` = server.
  explicit RunProject(const nlohmann::json& responses, std::map<std::string, std::string> extra = {},
                      const std::string& pipeline = dv_pipeline(), std::string binary = standin_binary().string(),
                      std::vector<std::string> profiles = {"kev", "laya"}) {
    write_text(dir / "responses.json", responses.dump(2));
    orch_config();
    for (const auto& name : profiles) {
      const std::string model = name == "laya" ? "laya-tiny.gguf" : "kev-tiny.gguf";
      std::string args = "[--responses, " + (dir / "responses.json").string();
      std::istringstream ex(extra[name]);
      for (std::string w; ex >> w;) args += ", \"" + w + "\"";
      args += "]";
      // One thread: llama-server's threads meet at a spinning barrier per token, and on a busy CPU
      // (the CI runs tests in parallel on 2 cores) a descheduled one stalls the rest: the demo
      // pipeline took 39 s instead of 3 s beside 4 busy loops, and over 300 s in a CI run.
      if (binary != standin_binary().string()) args = "[\"-t\", \"1\"]";
      write_text(dir / ("profiles/" + name + ".yaml"),
                 "name: " + name + "\nbinary: " + binary + "\nmodel: " + (tiny_models() / model).string() +
                     "\nngl: 0\nctx: 512\nparallel: 1\nextra_args: " + args +
                     "\nrestart: {backoff_initial_ms: 20, max_restarts: 20}\nstop: {grace_s: 5}\n");
    }
    write_text(dir / "pipelines/dv.yaml", pipeline);
  }

  // (Re)writes kevlaya.yaml: the project's folders, then `extra` (e.g. "residency: rotate\n").
  void orch_config(const std::string& extra = "") const {
    write_text(dir / "kevlaya.yaml",
               "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: log\n" + extra);
  }

  std::string orch() const { return orch_binary().string(); }
  std::string cd() const { return "cd " + dir.path().string() + " && "; }

  // `kevlaya-orch run pipelines/dv.yaml --config kevlaya.yaml ARGS` in the project folder.
  CmdResult run(const std::string& args) const {
    return run_command(cd() + orch() + " run pipelines/dv.yaml --config kevlaya.yaml " + args + " 2>&1");
  }
  // Same, stdout only (stderr goes to stderr.txt): for --json.
  CmdResult run_stdout(const std::string& args) const {
    // run_command appends 2>&1 to the whole line: the group keeps stderr in its own file.
    return run_command(cd() + "{ " + orch() + " run pipelines/dv.yaml --config kevlaya.yaml " + args +
                       " 2>stderr.txt; }");
  }
  CmdResult eval(const std::string& args) const {
    return run_command(cd() + orch() + " eval pipelines/dv.yaml --config kevlaya.yaml " + args + " 2>&1");
  }
  void tasks(const std::string& name, const std::vector<std::string>& lines) const {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    write_text(dir / name, text);
  }

  // Records of a journal (one JSON per line).
  std::vector<nlohmann::json> journal(const std::string& name) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir / name);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
};

// {"id": id, "input": text, "candidates": [...]} as one JSONL line.
inline std::string task_line(const std::string& id, const std::string& input) {
  return nlohmann::json{{"id", id}, {"input", input}, {"candidates", {"cache", "retry", "escalate", "abort"}}}.dump();
}

// The JSON document printed last on stdout by `--json` (the summary), from mixed output.
inline nlohmann::json last_json(const std::string& output) {
  const auto pos = output.rfind("\n{\n");
  const auto start = pos == std::string::npos ? output.find("{\n") : pos + 1;
  return nlohmann::json::parse(output.substr(start));
}

}  // namespace kevlaya::test
