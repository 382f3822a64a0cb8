// A streaming call's wait for its lease: the keep-alives and wait texts it sends meanwhile.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>

#include "http/apis.hpp"
#include "http/detail.hpp"
#include "http/loading_text.hpp"

namespace kevlaya::http {
namespace {

using supervisor::Lease;

struct PendingLease {
  explicit PendingLease(Strand s) : timer(std::move(s)) {}
  std::optional<Result<Lease>> result;
  asio::steady_timer timer;  // cancelled when `result` is set
};

}  // namespace

asio::awaitable<Result<Lease>> acquire_streaming(Door& d, Connection& c, const ProxyCall& call,
                                                 std::shared_ptr<upstream::CancelToken> cancel,
                                                 supervisor::Supervisor::Ticket ticket) {
  auto p = std::make_shared<PendingLease>(d.strand);
  auto task = [&sup = d.sup, p, cancel, ticket = std::move(ticket)]() -> asio::awaitable<void> {
    auto r = co_await sup.wait(ticket, cancel);
    p->result.emplace(std::move(r));
    p->timer.cancel();
  };
  asio::co_spawn(d.strand, std::move(task), [p](std::exception_ptr e) {
    if (e && !p->result) p->result.emplace(make_error(Errc::internal, "acquire failed unexpectedly"));
    p->timer.cancel();
  });
  const std::string comment = keepalive_event(call.shape, call.profile());
  std::string said;  // the last wait text sent
  while (!p->result) {
    boost::system::error_code ec;
    p->timer.expires_after(d.opt.keepalive_interval);
    co_await p->timer.async_wait(ec_token(ec));
    if (p->result) continue;
    std::string event;
    if (call.cfg->loading_messages(*call.prof) == config::LoadingMessages::reasoning) {
      const auto snap = co_await d.sup.snapshot();
      if (p->result) continue;
      const auto text = wait_text(snap, call.profile());
      if (text != said) event = wait_event(call, text);
      if (!event.empty()) said = text;
    }
    if (event.empty() && (comment.empty() || !swap_in_progress(d))) continue;
    if (event.empty()) event = comment;
    if (!c.head_sent()) {
      auto h = sse_headers({{"X-Kevlaya-Model", call.profile()},
                            {"Trailer", "X-Kevlaya-Queue-Ms, X-Kevlaya-Swap-Ms"}});
      std::string ctype = "text/event-stream";  // (no ?: of strings in a coroutine: GCC 12)
      if (call.stream_map) ctype = call.stream_type;
      if (!co_await c.start_stream(200, std::move(ctype), std::move(h))) break;
    }
    if (!co_await c.chunk(event)) break;
  }
  // A client that left stops waiting here and leaves the supervisor's queue (no load for nobody);
  // a lease granted meanwhile is dropped with `p`.
  if (!p->result) {
    cancel->cancel();
    co_return make_error(Errc::unavailable, "client disconnected while waiting");
  }
  co_return std::move(*p->result);
}

HeaderList sse_headers(HeaderList h) {
  h.emplace_back("Cache-Control", "no-cache");
  h.emplace_back("X-Accel-Buffering", "no");  // nginx & co.: do not buffer SSE
  return h;
}

// From the supervisor's event stream (Door::phases): no polling.
bool swap_in_progress(const Door& d) {
  using supervisor::Phase;
  for (const auto& [child, phase] : d.phases)
    if (phase == Phase::starting || phase == Phase::draining || phase == Phase::stopping) return true;
  return false;
}

}  // namespace kevlaya::http
