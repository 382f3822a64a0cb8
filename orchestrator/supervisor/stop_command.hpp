// A profile's stop command (backend=command, `stop.command`): run before the stop signal, in its
// own process group, killed with that group when it outlasts its timeout. Never throws.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace kevlaya::supervisor {

struct StopCommandResult {
  bool ran = false;        // the program was started
  bool timed_out = false;  // killed (with its group) after the timeout
  int exit_code = -1;      // when it exited by itself
  std::string error;       // why it did not run
  std::string describe() const;  // "exit 0", "timed out after 2.0 s", "cannot start: ..."
};

// Runs `argv` (argv[0] looked up on PATH) with `env` added to the inherited environment, stdin and
// output to /dev/null; waits at most `timeout`, then SIGKILLs its process group and reaps it.
boost::asio::awaitable<StopCommandResult> run_stop_command(boost::asio::any_io_executor ex,
                                                           std::vector<std::string> argv,
                                                           std::map<std::string, std::string> env,
                                                           std::chrono::milliseconds timeout);

}  // namespace kevlaya::supervisor
