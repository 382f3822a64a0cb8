// Helpers for supervisor tests: run a coroutine to completion, build configs, inspect /proc.
#pragma once
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::test {

namespace asio = boost::asio;

// Runs `make()` (a coroutine) on `ioc` until everything finishes; rethrows test failures.
template <class F>
void run_co(asio::io_context& ioc, F make) {
  std::exception_ptr err;
  // Children keep detached readers/watchers alive on `ioc`, so run() would not return on its own:
  // stop when the awaited coroutine completes; the rest stays queued for the next run_co.
  asio::co_spawn(ioc, make(), [&](std::exception_ptr e) {
    err = e;
    ioc.stop();
  });
  ioc.run();
  ioc.restart();
  if (err) std::rethrow_exception(err);
}

inline asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

inline std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

// A profile named `name` that runs `binary` on `model`, with fast health/stop/restart settings.
config::Profile fast_profile(const std::string& name, const std::string& binary,
                             const std::filesystem::path& model, std::vector<std::string> extra = {});

// Fast scheduling settings (no grouping delay, no residency floor).
config::Config fast_config(std::vector<config::Profile> profiles, const std::filesystem::path& dir);

// Pids of live (non-zombie) processes whose argv contains `needle`.
std::vector<int> pids_with_arg(const std::string& needle);
bool alive(int pid);  // exists and is not a zombie
// Live processes whose argv contains `needle` and that lead their own process group.
int group_leaders_with_arg(const std::string& needle);
int count_fds();      // entries in /proc/self/fd
int count_threads();  // entries in /proc/self/task

}  // namespace kevlaya::test
