// End to end: `kevlaya-orch serve` with the real ProcessEffects and the stand-in (or the real
// llama-server from $KEVLAYA_LLAMA_SERVER) as the child, driven by curl; SIGTERM exits 0.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "door_fixture.hpp"
#include "support/paths.hpp"

using namespace kevlaya::test;

namespace {

// `kevlaya-orch serve CONFIG --port 0` as a child process; reads its port from the log line.
class ServeProcess {
 public:
  explicit ServeProcess(const std::filesystem::path& config, std::vector<std::string> extra = {}) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<std::string> args = {orch_binary().string(), "serve", config.string(), "--port", "0"};
      for (auto& e : extra) args.push_back(e);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  // Reads the log until `re` matches a line (or EOF / timeout); returns the first group.
  std::string wait_for(const std::regex& re, std::chrono::milliseconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      if (std::regex_search(log_, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      auto n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      log_.append(buf, static_cast<std::size_t>(n));
    }
    return {};
  }
  int terminate_and_wait() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string log_;
};

void write_config(const TempDir& dir, const std::string& server_binary, const std::string& extra = "") {
  write_text(dir / "profiles/kev.yaml", "name: kev\nbinary: " + server_binary + "\nmodel: " +
                                            stories260k().string() + "\nngl: 0\nctx: 256\nparallel: 2\n");
  write_text(dir / "profiles/laya.yaml", "name: laya\nbinary: " + server_binary + "\nmodel: " +
                                             stories260k().string() + "\nngl: 0\nctx: 256\nparallel: 1\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\n" + extra);
}

void exercise(const std::string& server_binary) {
  TempDir dir("http-e2e");
  write_config(dir, server_binary);
  ServeProcess serve(dir / "kevlaya.yaml");
  const auto port_text = serve.wait_for(std::regex("kevlaya: listening on http://127\\.0\\.0\\.1:(\\d+)"));
  INFO(serve.log());
  REQUIRE_FALSE(port_text.empty());
  const std::string base = "http://127.0.0.1:" + port_text;
  const std::string chat = R"({"model":"kev","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  auto r = run_command("curl -sS -i --max-time 120 -H 'Content-Type: application/json' -d '" + chat +
                       "' " + base + "/v1/chat/completions");
  INFO(r.output);
  CHECK(r.output.find("HTTP/1.1 200") != std::string::npos);
  CHECK(r.output.find("X-Kevlaya-Model: kev") != std::string::npos);
  CHECK(r.output.find("\"choices\"") != std::string::npos);
  // A swap to laya, streamed.
  const std::string schat = R"({"model":"laya","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  auto s = run_command("curl -sS -N --max-time 120 -H 'Content-Type: application/json' -d '" + schat +
                       "' " + base + "/v1/chat/completions");
  INFO(s.output);
  CHECK(s.output.find("data: ") != std::string::npos);
  CHECK(s.output.find("[DONE]") != std::string::npos);
  auto m = run_command("curl -sS --max-time 30 " + base + "/v1/models");
  CHECK(m.output.find("\"resident\"") != std::string::npos);
  CHECK(serve.terminate_and_wait() == 0);
}

// A burst of concurrent requests alternating between two models that must rotate (one child at a
// time): every one is answered 200, none lost to a connection error while a child starts.
void alternating_burst(const std::string& server_binary, int n) {
  TempDir dir("http-burst");
  write_config(dir, server_binary, "residency: rotate\n");
  for (const char* name : {"kev", "laya"}) {  // same model file: opt out of the shared base
    auto f = dir / "profiles" / (std::string(name) + ".yaml");
    write_text(f, read_text(f) + "shared_base: false\n");
  }
  ServeProcess serve(dir / "kevlaya.yaml");
  const auto port = serve.wait_for(std::regex("kevlaya: listening on http://127\\.0\\.0\\.1:(\\d+)"));
  REQUIRE_FALSE(port.empty());
  std::string script = "for i in $(seq 1 " + std::to_string(n) + "); do m=kev; [ $((i % 2)) = 0 ] && m=laya; "
                       "curl -sS -o /dev/null -w '%{http_code}\\n' --max-time 120 -H 'Content-Type: application/json' "
                       "-d \"{\\\"model\\\":\\\"$m\\\",\\\"max_tokens\\\":4,\\\"messages\\\":[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"Once\\\"}]}\" "
                       "http://127.0.0.1:" + port + "/v1/chat/completions & done; wait";
  auto r = run_command(script);
  INFO(r.output);
  INFO(serve.log());
  CHECK(count_of(r.output, "200\n") == static_cast<std::size_t>(n));
  auto st = run_command("curl -sS --max-time 30 http://127.0.0.1:" + port + "/status");
  INFO(st.output);
  // It really rotated (grouping serves each model's waiting requests together, so one or more
  // switches, each between the two children).
  CHECK((st.output.find("\"from\":\"kev\",") != std::string::npos ||
         st.output.find("\"from\":\"laya\",") != std::string::npos));
  CHECK(serve.terminate_and_wait() == 0);
}

}  // namespace

TEST_CASE("serve answers every request of an alternating burst (no request lost while a child starts)",
          "[http][e2e]") {
  alternating_burst(standin_binary().string(), 24);
}

TEST_CASE("serve answers an alternating burst on the real llama-server", "[http][e2e][real]") {
  const auto real = real_llama_server();
  if (real.empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set");
  alternating_burst(real, 12);
}

TEST_CASE("serve end to end with the stand-in child, SIGTERM exits 0", "[http][e2e]") {
  exercise(standin_binary().string());
}

TEST_CASE("serve end to end with the real llama-server", "[http][e2e][real]") {
  const auto real = real_llama_server();
  if (real.empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set");
  exercise(real);
}

TEST_CASE("serve refuses a port already in use with a clear error", "[http][e2e]") {
  TempDir dir("http-port");
  write_config(dir, standin_binary().string());
  ServeProcess first(dir / "kevlaya.yaml");
  const auto port = first.wait_for(std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)"));
  REQUIRE_FALSE(port.empty());
  auto second = run_command(orch_binary().string() + " serve " + (dir / "kevlaya.yaml").string() +
                            " --port " + port);
  CHECK(second.exit_code == 1);
  CHECK(second.output.find("cannot listen on 127.0.0.1:" + port) != std::string::npos);
  CHECK(first.terminate_and_wait() == 0);
}
