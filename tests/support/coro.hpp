// Coroutine helpers shared by the process-level tests: run one coroutine to completion on an
// io_context, sleep, and deadlines.
#pragma once
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>

namespace kevlaya::test {

namespace asio = boost::asio;

// Runs `make()` (a coroutine) on `ex`, an executor of `ioc` (e.g. a strand), until it finishes;
// rethrows test failures.
template <class Executor, class F>
void run_co_on(asio::io_context& ioc, const Executor& ex, F make) {
  std::exception_ptr err;
  // Children keep detached readers/watchers alive on `ioc`, so run() would not return on its own:
  // stop when the awaited coroutine completes; the rest stays queued for the next run_co.
  asio::co_spawn(ex, make(), [&](std::exception_ptr e) {
    err = e;
    ioc.stop();
  });
  ioc.run();
  ioc.restart();
  if (err) std::rethrow_exception(err);
}

// run_co_on(ioc, ioc.get_executor(), make).
template <class F>
void run_co(asio::io_context& ioc, F make) {
  run_co_on(ioc, ioc.get_executor(), std::move(make));
}

inline asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

inline std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

}  // namespace kevlaya::test
