// Disk full under `kevlaya-orch run` (issue 14): the journal sits on a 64 KiB tmpfs (mounted in a
// private user+mount namespace, so nothing is left mounted and no root is needed where unprivileged
// namespaces are allowed). The summary must count only what the journal durably holds, and a
// --resume elsewhere finishes the rest with every task exactly once. State files are written whole
// or not at all under a full disk, and a broken one left by an older version is dropped at start-up.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <regex>

#include "common/replace_file.hpp"
#include "harness.hpp"
#include "e2e/pipeline_run/fixture.hpp"
#include "supervisor/state_file.hpp"

using namespace kevlaya::test;
using nlohmann::json;

namespace {

constexpr int kTasks = 120;

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The number after `label` in the summary line ("accepted 39"), or -1.
long summary_count(const std::string& out, const std::string& label) {
  std::smatch m;
  const std::regex re("summary: .*" + label + " (\\d+)");
  return std::regex_search(out, m, re) ? std::stol(m[1]) : -1;
}

}  // namespace

TEST_CASE("disk full: the run summary counts only tasks durably journaled, --resume finishes the rest",
          "[reliability][journal]") {
  if (run_command("unshare -rm true").exit_code != 0) KEVLAYA_SKIP("no user+mount namespace for a small tmpfs");
  const auto pass = json::array({{{"model", "laya"}, {"reply", R"({"verdict": "pass", "reason": "fits"})"}}});
  RunProject p(pass, {{"kev", "--fake-token-ms 0"}, {"laya", "--fake-token-ms 0"}});
  std::vector<std::string> lines;
  for (int i = 0; i < kTasks; ++i) lines.push_back(task_line("t" + std::to_string(i), "case " + std::to_string(i)));
  p.tasks("tasks.jsonl", lines);
  const std::string small = (p.dir / "small").string();
  std::filesystem::create_directories(small);

  // Mount, run with the journal there, copy the journal out before the namespace (and mount) ends.
  const auto r = run_command(
      p.cd() + "unshare -rm sh -c 'mount -t tmpfs -o size=64k tmpfs " + small + " || exit 99; " + p.orch() +
      " run pipelines/dv.yaml --config kevlaya.yaml --input-file tasks.jsonl --output " + small +
      "/out.jsonl; rc=$?; cp " + small + "/out.jsonl full.jsonl; exit $rc' 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code != 99);
  CHECK(r.exit_code == 1);  // a journal write failure stops the run
  CHECK(r.output.find("No space left on device") != std::string::npos);
  const std::string journal = read_text(p.dir / "full.jsonl");
  const auto durable = count_lines(journal);
  REQUIRE(durable > 0);
  REQUIRE(durable < static_cast<std::size_t>(kTasks));
  CHECK(journal.back() == '\n');  // the failed record was cut back off
  CHECK(summary_count(r.output, "accepted") == static_cast<long>(durable));
  CHECK(summary_count(r.output, "unfinished") == static_cast<long>(kTasks - durable));

  write_text(p.dir / "out.jsonl", journal);
  const auto again = p.run("--input-file tasks.jsonl --output out.jsonl --resume");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  std::map<std::string, int> seen;
  for (const auto& rec : p.journal("out.jsonl")) ++seen[rec["id"].get<std::string>()];
  CHECK(seen.size() == static_cast<std::size_t>(kTasks));
  for (const auto& [id, n] : seen) {
    INFO(id);
    CHECK(n == 1);
  }
}

namespace {

// Runs `fn` in a forked child whose files may not grow past 0 bytes (RLIMIT_FSIZE, SIGXFSZ
// ignored): every write fails as on a full disk, no privilege or mount needed. The child's exit
// code is `fn`'s result.
int with_no_room(const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit none{0, 0};
    if (::setrlimit(RLIMIT_FSIZE, &none) != 0) ::_exit(99);
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// Regression: the stream was checked before it was flushed, so a full disk left an empty state
// file (renamed over the record) and write_state reported success.
TEST_CASE("disk full: a state file is written whole or not at all, and the failure is reported",
          "[reliability][state]") {
  namespace sv = kevlaya::supervisor;
  TempDir dir("state-full");
  sv::ChildRecord rec{999999, 999999, 0, "kev", {"/bin/llama-server", "-m", "/m.gguf"}};
  const auto file = dir / "kev-999999.json";
  CHECK(with_no_room([&] {
          const auto st = sv::write_state(dir.path(), rec);
          return !st && st.error().message.find("File too large") != std::string::npos ? 0 : 1;
        }) == 0);
  CHECK_FALSE(std::filesystem::exists(file));  // no empty record
  CHECK(std::filesystem::is_empty(dir.path()));  // and no temporary file left behind
  // A file that is replaced keeps its old content when the new one cannot be written.
  kevlaya::test::write_text(dir / "store.json", "{\"old\": true}\n");
  CHECK(with_no_room([&] { return kevlaya::replace_file(dir / "store.json", "{\"new\": true}\n") ? 1 : 0; }) == 0);
  CHECK(read_text(dir / "store.json") == "{\"old\": true}\n");
}

// Regression: an empty record left by a full disk survived every restart, silently.
TEST_CASE("disk full: an empty or cut-short state file is ignored with a warning at startup and removed",
          "[reliability][state]") {
  TempDir dir("state-empty");
  const auto config = write_config(dir, {{"kev", {}, ""}});
  write_text(dir / "state/kev-4242.json", "");
  write_text(dir / "state/laya-4243.json", "{\"pid\": 4243, \"argv\": [\"/bin/llama");
  write_text(dir / "state/notes-1.json", "[1, 2]");  // JSON of someone else's: left alone
  Serve serve(config);
  const auto log = serve.proc().log();
  INFO(log);
  CHECK(std::regex_search(log, std::regex("ignoring and removing [^\n]*/kev-4242\\.json: empty or cut short")));
  CHECK(std::regex_search(log, std::regex("ignoring and removing [^\n]*/laya-4243\\.json: empty or cut short")));
  CHECK_FALSE(std::filesystem::exists(dir / "state/kev-4242.json"));
  CHECK_FALSE(std::filesystem::exists(dir / "state/laya-4243.json"));
  CHECK(std::filesystem::exists(dir / "state/notes-1.json"));
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
