#include "runtime/runtime.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>

#include "remote/peers.hpp"
#include "runtime/plan_setup.hpp"
#include "supervisor/process_effects.hpp"

namespace kevlaya::runtime {

namespace asio = boost::asio;

// How long a starting door waits for its peers to list their models (they may start after it).
constexpr auto kPeerWait = std::chrono::seconds(30);

Result<std::unique_ptr<Runtime>> Runtime::open(config::Config cfg) {
  std::optional<StateLock> lock;
  if (!cfg.orch.state_dir.empty()) {
    auto l = StateLock::acquire(cfg.orch.state_dir);
    if (!l) return l.error();
    lock.emplace(std::move(*l));
  }
  // Peers' models become remote profiles before anything is planned (they take no GPU here).
  if (!cfg.orch.peers.empty())
    if (auto st = remote::import_peers(cfg, kPeerWait); !st) return st.error();
  // Refusals are checked before anything is built: `run` and `eval` refuse what `serve` refuses.
  auto residency = plan_and_place(cfg);
  if (!residency) return residency.error();
  auto snap = ledger::make_snapshot(std::move(cfg), std::move(residency->plan));  // the plan's one owner
  std::unique_ptr<Runtime> rt(new Runtime(snap, lock ? std::move(*lock) : StateLock::none()));
  auto effects = std::make_unique<supervisor::ProcessEffects>(rt->ioc_, ledger::config_of(snap));
  rt->stale_killed_ = effects->stale_killed();
  if (rt->stale_killed_ > 0)
    spdlog::warn("killed {} leftover child(ren) of a previous run", rt->stale_killed_);
  auto opts = std::move(residency->options);
  opts.serial_executor = true;  // ioc_ is run by one thread (run() below)
  rt->sup_ = std::make_unique<supervisor::Supervisor>(rt->ioc_.get_executor(), ledger::config_of(snap), std::move(effects),
                                                      std::move(opts));
  return rt;
}

Runtime::Runtime(ledger::SnapshotPtr snap, StateLock lock) : snap_(std::move(snap)), lock_(std::move(lock)) {
  signalled_.expires_at(asio::steady_timer::time_point::max());
}

asio::awaitable<void> Runtime::until_signal() {
  boost::system::error_code ec;
  while (!interrupted_) co_await signalled_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

Runtime::~Runtime() = default;

void Runtime::on_first_signal(std::function<void()> hook, std::function<asio::awaitable<void>()> drain) {
  hook_ = std::move(hook);
  drain_ = std::move(drain);
}

asio::awaitable<void> Runtime::shutdown_once() {
  if (shutdown_started_) {  // the other path is shutting down: wait for it
    asio::steady_timer t(ioc_);
    while (!shutdown_done_) {
      t.expires_after(std::chrono::milliseconds(20));
      boost::system::error_code ec;
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return;
  }
  shutdown_started_ = true;
  co_await sup_->shutdown();
  shutdown_done_ = true;
}

asio::awaitable<void> Runtime::drain_then_stop() {
  if (drain_) co_await drain_();
  co_await shutdown_once();
}

bool Runtime::run(std::function<asio::awaitable<void>()> body) {
  bool body_done = false;
  std::function<void()> arm = [&] {
    sigs_.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      if (interrupted_) {
        spdlog::warn("second signal: stopping now");
        std::_Exit(kExitInterrupted);  // children die with us (PDEATHSIG)
      }
      interrupted_ = true;
      signalled_.cancel();
      spdlog::info("signal {}: draining, then stopping children (again to stop at once)", sig);
      if (hook_) hook_();
      // Without a body, the drain ends the run; with one, it also fails acquires still waiting
      // (e.g. on a slow model load) so the body returns promptly.
      asio::co_spawn(ioc_, [this, &body, &body_done]() -> asio::awaitable<void> {
        co_await drain_then_stop();
        if (!body || body_done) {
          sigs_.cancel();
          hup_.cancel();
          ioc_.stop();
        }
      }, asio::detached);
      arm();
    });
  };
  arm();
  std::function<void()> arm_hup = [&] {
    hup_.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      spdlog::info("SIGHUP: reloading the configuration");
      hangup_();
      arm_hup();
    });
  };
  if (hangup_) arm_hup();
  if (body) {
    asio::co_spawn(ioc_, [&]() -> asio::awaitable<void> {
      co_await body();
      body_done = true;
      co_await shutdown_once();
      sigs_.cancel();
      hup_.cancel();
      ioc_.stop();
    }, [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);  // a bug: let it surface from ioc_.run()
    });
  }
  ioc_.run();
  return interrupted_;
}

}  // namespace kevlaya::runtime
