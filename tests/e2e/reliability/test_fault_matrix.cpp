// The fault matrix: `kevlaya-orch serve` (a real process) with two stand-in profiles, `good` and
// `bad`; `bad` carries one stand-in fault per case. For every fault: each request gets a
// response (success or an OpenAI-shaped error with the documented status), the orchestrator
// keeps serving `good`, no zombie children, no fd growth, and after SIGTERM nothing the
// orchestrator started is left running (no orphan).
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <future>
#include <set>

#include "harness.hpp"

using namespace kevlaya::test;

namespace {

// One case: the fault's stand-in flags/YAML, and the requests that exercise it. `exercise`
// returns the statuses it saw; `allowed` is what the docs promise for this fault.
struct FaultCase {
  std::string name;
  std::vector<std::string> flags;
  std::string yaml;
  std::function<std::vector<HttpReply>(int port)> exercise;
  std::set<int> allowed;
};

// Holds a loopback port for the "port in use" case.
class PortHolder {
 public:
  PortHolder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 1);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~PortHolder() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::vector<HttpReply> bad_twice(int port) { return {chat(port, "bad"), chat(port, "bad")}; }

// Stream and plain requests to a child that aborts mid-generation.
std::vector<HttpReply> mid_stream(int port) { return {chat(port, "bad", true), chat(port, "bad")}; }

// A slow streamed answer from `bad` while `good` is asked for concurrently (one model at a time:
// the `good` request waits for the stream to end, then the switch).
std::vector<HttpReply> slow_tokens(int port) {
  auto slow = std::async(std::launch::async, [port] { return chat(port, "bad", true); });
  std::this_thread::sleep_for(100ms);  // let the slow one take the model first (not a sync point)
  auto other = chat(port, "good");
  return {slow.get(), other};
}

// Five requests into a child that exits at once: restarts with backoff, then `failed`.
std::vector<HttpReply> crash_loop(int port) {
  std::vector<HttpReply> out;
  for (int i = 0; i < 5; ++i) out.push_back(chat(port, "bad"));
  return out;
}

const std::vector<FaultCase>& cases() {
  static const std::vector<FaultCase> all = {
      {"load crash", {"--fake-exit-before-listen", "1"}, "", bad_twice, {503}},
      {"cuda oom", {"--fake-cuda-oom"}, "", bad_twice, {503}},
      {"hang (health never answers)", {"--fake-hang-health"},
       "health: {first_probe_ms: 5, interval_ms: 10, probe_timeout_ms: 200, startup_timeout_s: 1}\n",
       bad_twice, {504}},  // startup_timeout: a gateway timeout (code "timeout")
      {"ignored SIGTERM", {"--fake-ignore-sigterm"}, "", bad_twice, {200}},
      {"crash mid-request", {"--fake-crash-after", "1"}, "", [](int port) {
         return std::vector<HttpReply>{chat(port, "bad"), chat(port, "bad"), chat(port, "bad")};
       }, {200, 502}},
      {"crash mid-stream", {"--fake-crash-mid-stream"}, "", mid_stream, {200, 502}},
      {"crash loop", {"--fake-exit-before-listen", "3"}, "", crash_loop, {503}},
      {"slow tokens", {"--fake-token-ms", "150"}, "", slow_tokens, {200}},
  };
  return all;
}

// Checks every reply is complete: 200 with a body, or an OpenAI-shaped error; a 200 stream that
// the child broke must end with an error event rather than silently.
void check_replies(const std::vector<HttpReply>& replies, const std::set<int>& allowed) {
  for (const auto& r : replies) {
    INFO("status " << r.status << " body " << r.body);
    CHECK_FALSE(r.timed_out);
    CHECK(allowed.count(r.status) == 1);
    if (r.status != 200) {
      CHECK(is_openai_error(r.body));
    } else if (r.headers.count("content-type") &&
               r.headers.at("content-type").find("text/event-stream") != std::string::npos) {
      const bool done = r.body.find("data: [DONE]") != std::string::npos;
      const bool error = r.body.find("\"error\"") != std::string::npos;
      CHECK((done || error));
    } else {
      CHECK(r.body.find("\"choices\"") != std::string::npos);
    }
  }
}

// The invariants every case ends with, while the orchestrator is still up.
void check_process_hygiene(Serve& serve, int fds_before) {
  const pid_t orch = serve.proc().pid();
  CHECK(eventually([&] { return zombie_children_of(orch).empty(); }, 5s));
  // At most the resident child (and no second one left behind by a failed switch).
  CHECK(children_of(orch).size() <= 1);
  const int fds_after = fd_count(orch);
  INFO("fds before " << fds_before << ", after " << fds_after);
  CHECK(fds_after <= fds_before + 2);  // slack: a keep-alive or log file being swapped
}

}  // namespace

TEST_CASE("fault matrix: every stand-in fault is answered, contained and cleaned up",
          "[reliability][faults]") {
  const auto index = GENERATE(range(std::size_t{0}, cases().size()));
  const FaultCase& fc = cases()[index];
  SECTION(fc.name) {
    TempDir dir("faults");
    const std::string marker = "KEVLAYA_RELIABILITY_TAG=" + dir.path().string();
    const auto config = write_config(dir, {{"good", {}, ""}, {"bad", fc.flags, fc.yaml}});
    {
      Serve serve(config, {{"KEVLAYA_RELIABILITY_TAG", dir.path().string()}});
      const int port = serve.port();
      const auto warm = chat(port, "good");  // warm: good resident, its log file open
      INFO(warm.body << "\n" << serve.proc().log());
      REQUIRE(warm.status == 200);
      const int fds_before = fd_count(serve.proc().pid());

      check_replies(fc.exercise(port), fc.allowed);
      auto after = chat(port, "good");
      INFO(after.body);
      CHECK(after.status == 200);  // the other model keeps being served
      check_process_hygiene(serve, fds_before);
      CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
    }
    // No orphan: nothing started for this case outlives the orchestrator.
    CHECK(eventually([&] { return processes_with_env(marker).empty(); }, 5s));
  }
}

TEST_CASE("fault matrix: a child port already in use is a 503, and `logs` shows why",
          "[reliability][faults][logs]") {
  TempDir dir("faults-port");
  PortHolder taken;
  const auto config = write_config(dir, {{"good", {}, ""},
                                         {"bad", {}, "port: " + std::to_string(taken.port()) + "\n"}});
  Serve serve(config);
  const auto warm = chat(serve.port(), "good");
  INFO(warm.body << "\n" << serve.proc().log());
  REQUIRE(warm.status == 200);
  const int fds_before = fd_count(serve.proc().pid());
  check_replies({chat(serve.port(), "bad")}, {503});
  CHECK(chat(serve.port(), "good").status == 200);
  check_process_hygiene(serve, fds_before);

  auto logs = run_command(orch_binary().string() + " logs bad -n 20 --config " + config.string());
  CHECK(logs.exit_code == 0);
  CHECK(logs.output.find("couldn't bind HTTP server socket") != std::string::npos);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}
