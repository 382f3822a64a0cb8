// Many switches between two real processes: the one-at-a-time invariant (checked from /proc),
// no growth in fds/threads/children; `up` killed with SIGKILL leaves no child; real llama-server.
#include <catch2/catch.hpp>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/detached.hpp>
#include <fstream>

#include "support/models.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "supervisor/process_effects.hpp"
#include "support/supervisor_fixture.hpp"
#include "support/proc_probes.hpp"
#include "supervisor/supervisor.hpp"

using namespace kevlaya;
using namespace kevlaya::supervisor;
using namespace std::chrono_literals;
using kevlaya::test::in;
using kevlaya::test::run_co;

namespace {

struct Rotation {
  int max_alive_together = 0;
  int samples = 0;
};

// Alternates `n` switches between two profiles while a watcher samples /proc for both tags.
Rotation rotate(const std::string& binary, int n, const std::string& name) {
  test::TempDir dir(name);
  // The child argv carries only the profile name as alias, so tag each child through its model
  // path (a uniquely named link to the same file) to find it in /proc.
  const std::string ta = "rot-a-" + std::to_string(::getpid()), tb = "rot-b-" + std::to_string(::getpid());
  std::filesystem::create_symlink(test::tiny_llama(), dir / (ta + ".gguf"));
  std::filesystem::create_symlink(test::tiny_llama(), dir / (tb + ".gguf"));
  auto a = test::fast_profile("a", binary, dir / (ta + ".gguf"));
  auto b = test::fast_profile("b", binary, dir / (tb + ".gguf"));
  a.alias = {ta};
  b.alias = {tb};
  auto cfg = test::fast_config({a, b}, dir.path());
  asio::io_context ioc;
  Rotation rot;
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg)));
  bool done = false;
  int fds_after_warmup = 0, threads_after_warmup = 0;
  // Count supervised children, i.e. process-group leaders (each child is spawned into its own
  // group): a short-lived fork of a child (the ASan runtime forks helpers) shares its cmdline
  // and must not count as a second child.
  auto sample = [&] {
    int together = test::group_leaders_with_arg(a.alias[0]) + test::group_leaders_with_arg(b.alias[0]);
    rot.max_alive_together = std::max(rot.max_alive_together, together);
    ++rot.samples;
  };
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {  // between switches, as often as it gets run
    while (!done) {
      sample();
      co_await test::sleep_for(3ms);
    }
  }, asio::detached);
  run_co(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < n; ++i) {
      auto l = co_await sup.acquire(i % 2 ? "b" : "a", in(30s));
      REQUIRE(l.ok());
      sample();  // at every switch too: on a loaded machine the timer sampler may rarely run
      l->release();
      if (i == 1) {
        fds_after_warmup = test::fd_count();
        threads_after_warmup = test::thread_count();
      }
    }
    auto snap = co_await sup.snapshot();
    CHECK(snap.recent_switches.size() == static_cast<std::size_t>(std::min(n, 100)));
    co_await sup.shutdown();
    done = true;
  });
  CHECK(test::fd_count() <= fds_after_warmup);
  CHECK(test::thread_count() <= threads_after_warmup);
  CHECK(test::pids_with_arg(a.alias[0]).empty());
  CHECK(test::pids_with_arg(b.alias[0]).empty());
  return rot;
}

}  // namespace

TEST_CASE("supervisor: many alternating switches, never two children alive, no leaks") {
  constexpr int kSwitches = 200;  // issue 4: 200 alternating switches
  auto rot = rotate(test::standin_binary().string(), kSwitches, "sup-rot");
  CHECK(rot.samples > kSwitches);
  CHECK(rot.max_alive_together == 1);
}

TEST_CASE("supervisor: real llama-server switches one at a time") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  auto rot = rotate(real, 6, "sup-rot-real");
  CHECK(rot.max_alive_together == 1);
}

namespace {

// Regression: shutdown asked the effects to stop a child whose stop (a switch) was already in
// flight; the effects had forgotten it, so shutdown returned while the process was still exiting.
void shutdown_after_stop_in_flight(const std::string& binary) {
  test::TempDir dir("sup-stop-inflight");
  const std::string tag = "inflight-a-" + std::to_string(::getpid());
  std::filesystem::create_symlink(test::tiny_llama(), dir / (tag + ".gguf"));
  auto a = test::fast_profile("a", binary, dir / (tag + ".gguf"));
  auto b = test::fast_profile("b", binary, test::tiny_llama());
  auto cfg = test::fast_config({a, b}, dir.path());
  cfg.orch.scheduling.switch_ahead = false;
  asio::io_context ioc;
  Supervisor sup(ioc.get_executor(), std::make_shared<const config::Config>(cfg), std::make_unique<ProcessEffects>(ioc, std::make_shared<const config::Config>(cfg)));
  std::vector<Event> seen;
  auto sub = sup.subscribe([&](const Event& e) { seen.push_back(e); });
  run_co(ioc, [&]() -> asio::awaitable<void> {
    auto l = co_await sup.acquire("a", in(30s));
    REQUIRE(l.ok());
    l->release();
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { co_await sup.acquire("b", in(30s)); }, asio::detached);
    while (std::none_of(seen.begin(), seen.end(), [](const Event& e) {  // a's stop has begun
      return e.type == Event::Type::phase && e.child == "a" && e.to == Phase::stopping;
    }))
      co_await test::sleep_for(0ms);
    co_await sup.shutdown();
    CHECK(test::pids_with_arg(tag).empty());
  });
}

}  // namespace

TEST_CASE("supervisor: shutdown returns only after a stop already in flight has ended") {
  shutdown_after_stop_in_flight(test::standin_binary().string());
}

TEST_CASE("supervisor: shutdown waits for a real llama-server's stop in flight") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  shutdown_after_stop_in_flight(real);
}

TEST_CASE("supervisor: up killed with SIGKILL leaves no child behind") {
  test::TempDir dir("sup-up-kill");
  std::string tagname = "upkill-" + std::to_string(::getpid());
  test::write_text(dir / "profiles" / "kev.yaml",
                   "name: kev\nbinary: " + test::standin_binary().string() + "\nmodel: " +
                       (dir / (tagname + ".gguf")).string() + "\nngl: 0\nctx: 256\n");
  std::filesystem::create_symlink(test::tiny_llama(), dir / (tagname + ".gguf"));
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\n");
  auto r = test::run_command(test::orch_binary().string() + " up " + (dir / "kevlaya.yaml").string() +
                             " kev >" + (dir / "out.txt").string() + " 2>&1 & echo $!");
  int orch = std::stoi(r.output);
  std::vector<int> child;
  for (int i = 0; i < 1000 && child.empty(); ++i) {  // wait for the child to appear (bounded)
    child = test::pids_with_arg(tagname);
    if (child.empty()) usleep(10000);
  }
  REQUIRE(child.size() == 1);
  ::kill(orch, SIGKILL);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // within 1 s
    gone = !test::alive(child[0]);
    if (!gone) usleep(10000);
  }
  INFO(test::read_text(dir / "out.txt"));
  CHECK(gone);
}

TEST_CASE("supervisor: up rotates, prints switches, stops on SIGTERM") {
  test::TempDir dir("sup-up-cycle");
  for (const char* n : {"kev", "laya"})
    test::write_text(dir / "profiles" / (std::string(n) + ".yaml"),
                     std::string("name: ") + n + "\nbinary: " + test::standin_binary().string() + "\nmodel: " +
                         test::tiny_llama().string() + "\nngl: 0\nctx: 256\nshared_base: false\n");
  test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\nresidency: rotate\n");
  std::string out = (dir / "out.txt").string();
  auto r = test::run_command(test::orch_binary().string() + " up " + (dir / "kevlaya.yaml").string() +
                             " kev laya --cycle 2 >" + out + " 2>&1 & echo $!");
  int orch = std::stoi(r.output);
  std::string text;
  for (int i = 0; i < 3000 && text.find("up; Ctrl-C") == std::string::npos; ++i) {
    usleep(10000);
    text = test::read_text(out);
  }
  REQUIRE(text.find("up; Ctrl-C") != std::string::npos);
  ::kill(orch, SIGTERM);
  auto w = test::run_command("while kill -0 " + std::to_string(orch) + " 2>/dev/null; do sleep 0.05; done");
  CHECK(w.exit_code == 0);
  text = test::read_text(out);
  CHECK(text.find("switch kev -> laya") != std::string::npos);
  CHECK(text.find("switch laya -> kev") != std::string::npos);
  // No child state file is left (the ledger's measurements, the load times the supervisor keeps and
  // the state_dir lock file stay).
  for (const auto& e : std::filesystem::directory_iterator(dir / "state")) {
    const auto name = e.path().filename();
    CHECK((name == "ledger-measurements.json" || name == "ledger-load-times.json" || name == "kevlaya-orch.lock"));
  }
}

namespace {

std::size_t count_lines_with(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Regression: SIGINT while `up --cycle` switched raced the body: a start the shutdown had not seen
// yet came up after it, `up` printed "up; Ctrl-C to stop" and waited for a second signal with that
// child alive. SIGINT is sent after 1..`rounds` printed switches (so it lands in the next switch,
// at a different moment each time): `up` exits 130 within the drain, and no child is left.
void sigint_mid_cycle(const std::string& binary, int rounds) {
  for (int after = 1; after <= rounds; ++after) {
    INFO("SIGINT after " << after << " switch(es)");
    test::TempDir dir("sup-up-sigint");
    const std::string tag = "upint-" + std::to_string(::getpid()) + "-" + std::to_string(after);
    for (const char* n : {"kev", "laya"}) {
      const auto model = dir / (tag + "-" + n + ".gguf");
      std::filesystem::create_symlink(test::tiny_llama(), model);
      test::write_text(dir / "profiles" / (std::string(n) + ".yaml"),
                       std::string("name: ") + n + "\nbinary: " + binary + "\nmodel: " + model.string() +
                           "\nngl: 0\nctx: 256\nshared_base: false\nhealth: {first_probe_ms: 10, interval_ms: 20}\n");
    }
    test::write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\nstate_dir: state\nlog_dir: logs\nresidency: rotate\n"
                                           "scheduling: {min_residency_ms: 0, max_wait_before_swap_ms: 0}\n");
    test::Proc up({test::orch_binary().string(), "up", (dir / "kevlaya.yaml").string(), "kev", "laya", "--cycle", "100"},
                  dir / "up.log");
    REQUIRE(test::eventually([&] { return count_lines_with(up.log(), "switch ") >= static_cast<std::size_t>(after); },
                             60s));
    ::kill(up.pid(), SIGINT);
    const auto code = up.wait_exit(30s);
    INFO(up.log());
    CHECK(code == std::optional<int>(130));
    CHECK(up.log().find("up; Ctrl-C to stop") == std::string::npos);
    CHECK(test::pids_with_arg(tag).empty());
  }
}

}  // namespace

TEST_CASE("supervisor: SIGINT while up cycles drains, stops every child and exits 130") {
  sigint_mid_cycle(test::standin_binary().string(), 6);
}

TEST_CASE("supervisor: SIGINT while up cycles on the real llama-server exits 130 with no child left") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  sigint_mid_cycle(real, 3);
}
