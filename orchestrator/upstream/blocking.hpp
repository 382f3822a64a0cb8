// One exchange run to its end on a private io_context, for a caller with no executor of its own
// (the CLI's door client, startup's peer imports): blocks until `op(executor)`'s awaitable ends.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

#include "common/error.hpp"

namespace kevlaya::upstream {

template <class T, class Op>
Result<T> run_blocking(Op op) {
  boost::asio::io_context ioc;
  std::optional<Result<T>> out;
  auto task = [&]() -> boost::asio::awaitable<void> { out.emplace(co_await op(ioc.get_executor())); };
  boost::asio::co_spawn(ioc, task(), boost::asio::detached);
  ioc.run();
  if (!out) return make_error(Errc::internal, "the exchange ended without a result");
  return std::move(*out);
}

}  // namespace kevlaya::upstream
