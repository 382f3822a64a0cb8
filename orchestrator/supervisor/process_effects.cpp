#include "supervisor/process_effects.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "common/random.hpp"
#include "config/backend.hpp"
#include "supervisor/nvml.hpp"
#include "supervisor/state_file.hpp"
#include "warm/page_cache.hpp"
#include "warm/predict.hpp"
#include "warm/prefetcher.hpp"
#include "warm/slot_cache.hpp"

namespace kevlaya::supervisor {

namespace {

constexpr int kPortAttempts = 3;
constexpr std::size_t kChildKeyBytes = 24;
constexpr auto kVramWaitMax = std::chrono::seconds(5);
constexpr auto kVramPoll = std::chrono::milliseconds(20);
// "Back near its level": within this much of the free memory measured before the start.
constexpr std::uint64_t kVramSlackBytes = 128ULL << 20;

}  // namespace

int pick_free_port(const std::string& host) {
  asio::io_context ioc;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host.empty() || host == "0.0.0.0" ? "127.0.0.1" : host, ec);
  if (ec) addr = asio::ip::address_v4::loopback();
  asio::ip::tcp::acceptor acc(ioc);
  acc.open(addr.is_v6() ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), ec);
  if (ec) return 0;
  set_cloexec(acc.native_handle());
  acc.bind({addr, 0}, ec);
  if (ec) return 0;
  return acc.local_endpoint().port();
}

ProcessEffects::ProcessEffects(asio::io_context& ioc, config::ConfigPtr cfg)
    : ioc_(ioc), orch_(cfg->orch), cfg_(std::move(cfg)) {
  if (!orch_.state_dir.empty()) stale_killed_ = reap_stale(orch_.state_dir);
  if (orch_.prefetch.enabled) {
    warm::PrefetchOptions po;
    po.min_available_mib = orch_.prefetch.min_available_mib;
    prefetcher_ = std::make_unique<warm::Prefetcher>(std::move(po));
  }
}

ProcessEffects::~ProcessEffects() = default;  // Child handles SIGKILL anything left

asio::awaitable<StartOutcome> ProcessEffects::start(const ledger::ChildSpec& c, ExitCallback on_exit) {
  const config::Profile& p = *c.profile;  // what the child runs, named for it
  if (!config::backend_of(p).spawns) {  // the Supervisor routes these without a child
    StartOutcome bug;
    bug.failure.kind = FailureKind::internal;
    bug.failure.message = p.name + " is a remote profile: there is nothing to start";
    co_return bug;
  }
  auto run = std::make_shared<Running>();  // registered before the first suspension: stop() finds it
  running_[p.name] = run;
  // Reading another model now would compete with this child's own load for the disk.
  if (prefetcher_ && !prefetching_.empty() && prefetching_ != p.name) prefetcher_->cancel();
  prefetching_.clear();
  const double resident = p.model.empty() ? -1.0 : warm::resident_pct(p.model);
  run->slots = slot_plan(p, orch_.state_dir);
  run->log_offset = log_size(p.name);  // load progress reads what the child logs from here on
  StartOutcome out = co_await spawn_child(p, *run, std::move(on_exit));
  if (!out.ok()) {
    if (running(p.name) == run.get()) running_.erase(p.name);
    co_return out;
  }
  out.report->prefetch_resident_pct = resident;
  run->ready = out.report->endpoint;
  if (run->slots) {
    co_await restore_slots(*run->slots, out.report->endpoint, *out.report);
    out.report->total_ms += out.report->restore_ms;
  }
  prefetch_after_start(p.name);
  co_return out;
}

asio::awaitable<StartOutcome> ProcessEffects::spawn_child(const config::Profile& p, Running& run,
                                                         ExitCallback on_exit) {
  // The devices the child will use (device 0 without a placement, as before placement existed).
  for (const int dev : p.placement.devices.empty() ? std::vector<int>{0} : p.placement.devices)
    if (auto m = nvml::memory(static_cast<unsigned>(dev))) run.free_before.emplace_back(static_cast<unsigned>(dev), m->free);
  StartOutcome out;
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    ChildOptions o;
    o.profile = p;
    o.host = "127.0.0.1";  // children are reached only through the orchestrator
    o.port = p.port ? *p.port : pick_free_port(o.host);
    o.log_dir = orch_.log_dir;
    o.state_dir = orch_.state_dir;
    if (run.slots) o.slot_save_path = run.slots->dir;
    // A fresh key per start, known only to this process: the door's keys cannot be skipped by
    // talking to the child's port. Other backends are not llama-server and get none.
    if (config::backend_of(p).llama_server) o.api_key = random_hex(kChildKeyBytes);
    auto child = Child::create(ioc_, o);
    // Keep-alive connections to this process only: closed when it dies or stops.
    auto pool = std::make_shared<upstream::ConnectionPool>(static_cast<std::size_t>(std::max(8, 2 * p.parallel)));
    child->on_unexpected_exit([pool, on_exit](ChildFailure f) {
      pool->close();
      if (on_exit) on_exit(std::move(f));
    });
    run.child = child;
    out = co_await child->start();
    if (out.ok()) {
      out.report->attempts = attempt;
      out.report->endpoint.pool = std::move(pool);
      co_return out;
    }
    const bool still_wanted = running(p.name) == &run;  // a stop meanwhile took the record
    if (out.failure.kind != FailureKind::port_in_use || p.port || !still_wanted) break;
    spdlog::warn("{}: port {} was taken, retrying on another port ({}/{})", p.name, o.port, attempt,
                 kPortAttempts);
  }
  co_return out;
}

asio::awaitable<StopReport> ProcessEffects::stop(const std::string& profile) {
  const auto it = running_.find(profile);
  if (it == running_.end() || !it->second->child) co_return StopReport{};
  const auto run = it->second;
  running_.erase(it);
  StopReport saved;
  if (run->slots && run->ready) co_await save_slots(*run->slots, *run->ready, saved);
  if (run->ready && run->ready->pool) run->ready->pool->close();
  StopReport rep = co_await run->child->stop();
  rep.save_ms = saved.save_ms;
  rep.slots_saved = saved.slots_saved;
  rep.stop_ms += saved.save_ms;
  if (!run->free_before.empty()) rep.vram_wait_ms = co_await wait_for_vram(run->free_before);
  co_return rep;
}

std::optional<std::uint64_t> ProcessEffects::host_ram_available() {
  const auto mib = warm::mem_available_mib();
  if (!mib || *mib < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*mib) << 20;
}

void ProcessEffects::likely_next(const std::string& profile) {
  if (!prefetcher_ || running_.count(profile) || prefetching_ == profile) return;
  // The version in force: a reload may have moved the model.
  if (const auto* p = cfg_->find_profile(profile)) prefetch(*p);
}

bool ProcessEffects::exited(const std::string& profile) {
  const auto* run = running(profile);
  return run && run->child && run->child->exited();
}

asio::awaitable<bool> ProcessEffects::responsive(const std::string& profile) {
  const auto* run = running(profile);
  if (!run || !run->child || !run->ready) co_return true;  // not ready: nothing to judge
  const auto& h = run->child->options().profile.health;
  upstream::Request req;
  if (!h.path.empty()) req.target = h.path;  // else "/" (no ?: of strings in a coroutine: GCC 12)
  req.timeout = std::chrono::milliseconds(h.probe_timeout_ms);
  upstream::Endpoint fresh = *run->ready;
  fresh.pool = nullptr;  // its own connection: the pooled ones may be the silent ones
  auto res = co_await upstream::fetch(ioc_.get_executor(), fresh, req);
  co_return res.ok();  // any answer: the process serves; only silence is `hung`
}

void ProcessEffects::kill(const std::string& profile) {
  if (auto* run = running(profile); run && run->child) run->child->kill_now();
}

ProcessEffects::Running* ProcessEffects::running(const std::string& profile) {
  const auto it = running_.find(profile);
  return it == running_.end() ? nullptr : it->second.get();
}

void ProcessEffects::wait_prefetch_idle() {
  if (prefetcher_) prefetcher_->wait_idle();
}

// After `started` is up, read the profile most likely to follow it (docs/warm.md: prediction).
void ProcessEffects::prefetch_after_start(const std::string& started) {
  std::string previous = last_started_ == started ? std::string() : last_started_;
  last_started_ = started;
  if (!prefetcher_) return;
  for (const auto& name : warm::likely_next(*cfg_, started, previous)) {
    if (running_.count(name)) continue;  // already resident (co-resident sets)
    likely_next(name);
    return;
  }
}

void ProcessEffects::prefetch(const config::Profile& p) {
  auto files = warm::profile_files(p);
  if (files.empty()) return;
  prefetching_ = p.name;
  spdlog::debug("{}: prefetching {} file(s) into the page cache", p.name, files.size());
  prefetcher_->prefetch(std::move(files), [name = p.name](const warm::PrefetchResult& r) {
    // Runs on the prefetch thread: log only (spdlog is thread-safe).
    spdlog::info("prefetch {}: {} ({} MiB in {} ms){}{}", name, warm::to_string(r.end), r.bytes_advised >> 20,
                 r.ms, r.message.empty() ? "" : ": ", r.message);
  });
}

// Polls NVML until free memory on every device the child used is back near its level before the
// start (the driver frees a dead process's memory asynchronously), bounded: after kVramWaitMax
// proceed with a warning.
asio::awaitable<std::int64_t> ProcessEffects::wait_for_vram(VramBaseline baseline) {
  auto t0 = std::chrono::steady_clock::now();
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    std::erase_if(baseline, [](const auto& b) {
      const auto m = nvml::memory(b.first);
      return !m || m->free + kVramSlackBytes >= b.second;
    });
    if (baseline.empty()) break;
    if (std::chrono::steady_clock::now() - t0 >= kVramWaitMax) {
      const auto m = nvml::memory(baseline.front().first);
      spdlog::warn("GPU {} memory not back after {} s ({} MiB free, {} MiB before); starting anyway",
                   baseline.front().first, kVramWaitMax.count(), m ? m->free >> 20 : 0, baseline.front().second >> 20);
      break;
    }
    timer.expires_after(kVramPoll);
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return ms_since(t0);
}

}  // namespace kevlaya::supervisor
