#include "supervisor/stop_command.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/process.hpp>
#include <cstdio>

#include "supervisor/spawn_setup.hpp"

namespace kevlaya::supervisor {

namespace bp = boost::process;
namespace asio = boost::asio;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(20);

}  // namespace

std::string StopCommandResult::describe() const {
  if (!ran) return "cannot start: " + error;
  if (timed_out) return "timed out (killed)";
  return "exit " + std::to_string(exit_code);
}

asio::awaitable<StopCommandResult> run_stop_command(asio::any_io_executor ex, std::vector<std::string> argv,
                                                    std::map<std::string, std::string> env,
                                                    std::chrono::milliseconds timeout) {
  StopCommandResult r;
  if (argv.empty()) {
    r.error = "empty command";
    co_return r;
  }
  const std::string exe = argv[0].find('/') != std::string::npos ? argv[0] : bp::search_path(argv[0]).string();
  if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) {
    r.error = "not found or not executable: " + argv[0];
    co_return r;
  }
  bp::environment e = boost::this_process::environment();
  for (const auto& [k, v] : env) e[k] = v;
  std::error_code ec;
  bp::child c(bp::exe = exe, bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()), bp::env = e,
              bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > bp::null, SpawnSetup{}, ec);
  if (ec) {
    r.error = ec.message();
    co_return r;
  }
  r.ran = true;
  const pid_t pid = c.id();
  c.detach();  // reaped here with waitpid
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  asio::steady_timer t(ex);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      co_return r;
    }
    t.expires_after(kPoll);
    co_await t.async_wait(asio::use_awaitable);
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  co_return r;
}

}  // namespace kevlaya::supervisor
