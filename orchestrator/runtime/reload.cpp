#include "runtime/reload.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <regex>
#include <set>

#include "common/bytes.hpp"
#include "common/strings.hpp"
#include "remote/peers.hpp"
#include "runtime/plan_setup.hpp"
#include "runtime/runtime.hpp"

namespace kevlaya::runtime {

namespace asio = boost::asio;
namespace fs = std::filesystem;

struct Reloader::Shared {
  bool busy = false;
  bool retry_pending = false;  // a deferred reload's retry is scheduled
  int retries = 0;             // deferred reloads in a row
  // Reading the files, the GGUF headers and the residency search run here, not on the door's
  // thread: requests in flight and /health keep their answers during a reload.
  asio::thread_pool planner{1};
};

namespace {

void stamp_dir(std::string& out, const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> lines;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    const auto t = fs::last_write_time(e.path(), ec2);
    const auto size = e.is_regular_file(ec2) ? e.file_size(ec2) : 0;
    lines.push_back(e.path().string() + ":" + std::to_string(size) + ":" +
                    std::to_string(t.time_since_epoch().count()));
  }
  std::sort(lines.begin(), lines.end());  // directory order is unspecified
  for (const auto& l : lines) out += l + "\n";
}

// The next configuration, read and planned: what reload() applies, or the errors that refuse it.
struct Prepared {
  config::Config config;
  std::optional<supervisor::SupervisorOptions> options;  // nullopt: refused or deferred
  std::optional<ledger::Plan> plan;                      // the residency plan made for it
  std::vector<std::string> errors;
  std::string deferred;  // non-empty: a model file still being written; why
};

// Modified less than kSettle ago: a copy or a download may still be writing it.
bool unsettled(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  return !ec && fs::file_time_type::clock::now() - t < Reloader::kSettle;
}

// Every file a configuration reads models from: each profile's model, adapters and --mmproj.
std::set<fs::path> used_files(const config::Config& c) {
  std::set<fs::path> out;
  for (const auto& p : c.profiles) {
    if (!p.model.empty()) out.insert(p.model.lexically_normal());
    for (const auto& l : p.lora) out.insert(l.path.lexically_normal());
    for (std::size_t i = 0; i + 1 < p.extra_args.size(); ++i)
      if (p.extra_args[i] == "--mmproj") out.insert(fs::path(p.extra_args[i + 1]).lexically_normal());
  }
  return out;
}

// A later shard of a split model (NAME-0000N-of-0000M.gguf, N > 1): read through the first one.
bool later_shard(const fs::path& p) {
  static const std::regex re(R"(.*-([0-9]{5})-of-[0-9]{5}\.gguf)");
  std::smatch m;
  const std::string name = p.filename().string();
  return std::regex_match(name, m, re) && m[1].str() != "00001";
}

// Why `next` should wait ("" when it need not): a *.gguf of models_dir written moments ago that the
// scan left out (unreadable while it is copied), or a model the ledger could not read (`read`)
// that is being written or changed while read (Errc::io_error).
std::string why_wait(const config::Config& next, const std::optional<Error>& read) {
  const auto used = used_files(next);
  std::error_code ec;
  if (!next.orch.models_dir.empty()) {
    for (const auto& e : fs::directory_iterator(next.orch.models_dir, ec)) {
      const auto& p = e.path();
      if (p.extension() != ".gguf" || later_shard(p) || used.count(p.lexically_normal()) || !unsettled(p)) continue;
      return "models_dir: " + printable(config::display_path(p)) + " is still being written";
    }
  }
  if (!read) return {};
  const bool writing = std::any_of(used.begin(), used.end(), [](const fs::path& p) { return unsettled(p); });
  if (writing || read->code == Errc::io_error) return "a model file is still being written: " + read->message;
  return {};
}

// As at start (Runtime::open): the file, the overrides, the peers' models, then plan_and_place.
// Without the peers and the placement a reload dropped the peers' models and restarted a changed
// child without its devices (no CUDA_VISIBLE_DEVICES: every GPU). Touches nothing shared: runs
// on the planner thread.
// `accept_unsettled`: apply what reads now even if a model file is still being written.
Prepared prepare(const config::Source& source, const std::function<void(config::Config&)>& overrides,
                 const config::Config& running, bool accept_unsettled) {
  Prepared out;
  auto loaded = config::load(source);
  for (const auto& d : loaded.diagnostics) {
    if (d.severity != config::Severity::error) continue;
    out.errors.push_back(d.format());
    spdlog::error("reload: {}", printable(d.format()));
  }
  if (!loaded.ok()) return out;
  out.config = std::move(loaded.config);
  if (overrides) overrides(out.config);
  if (!accept_unsettled)
    if (out.deferred = why_wait(out.config, std::nullopt); !out.deferred.empty()) return out;
  Status st = remote::carry_imported(out.config, running);
  if (st) {
    auto residency = plan_and_place(out.config);
    const std::optional<Error> read = residency ? residency->unread : std::optional<Error>(residency.error());
    if (!accept_unsettled && read)
      if (out.deferred = why_wait(out.config, read); !out.deferred.empty()) return out;
    if (residency) {
      out.options = std::move(residency->options);
      out.plan = std::move(residency->plan);
    }
    else st = residency.error();
  }
  if (!st) {
    out.errors.push_back(st.error().message);
    spdlog::error("reload: {}", printable(st.error().message));
  }
  return out;
}

// prepare() as a coroutine for the planner thread. Its arguments are copies held by its frame (a
// lambda's captures did not outlive GCC 12's coroutine lambda: a bad free at its end).
asio::awaitable<Prepared> prepare_on(config::Source source, std::function<void(config::Config&)> overrides,
                                     ledger::SnapshotPtr running, bool accept_unsettled) {
  co_return prepare(source, overrides, running->config, accept_unsettled);
}

std::string list_of(const std::vector<std::string>& v) { return "[" + join(v, ",") + "]"; }

// What a running process keeps as it started, one row per setting, rendered for comparison: the
// socket, the folders, the prefetcher, the preloads, the tools host, and the history's and the
// captures' stores (opened once, with their bounds; the door keeps them: http/door.cpp set_config).
struct FixedSetting {
  const char* key;
  std::string (*render)(const config::OrchestratorCfg&);
  bool show_values = true;  // false: long and may hold paths, so only named
};
const FixedSetting kFixedAtStart[] = {
    {"listen", [](const config::OrchestratorCfg& o) { return o.listen.host + ":" + std::to_string(o.listen.port); }},
    {"state_dir", [](const config::OrchestratorCfg& o) { return o.state_dir.string(); }},
    {"log_dir", [](const config::OrchestratorCfg& o) { return o.log_dir.string(); }},
    {"prefetch",
     [](const config::OrchestratorCfg& o) {
       return std::to_string(o.prefetch.enabled) + "/" + std::to_string(o.prefetch.min_available_mib);
     }},
    {"preload", [](const config::OrchestratorCfg& o) { return list_of(o.preload); }},
    {"tools",
     [](const config::OrchestratorCfg& o) {
       const auto& t = o.tools;
       return t.builtin + "|" + t.mcp_servers.string() + "|" + t.mcp_servers_json + "|" + t.binary + "|" +
              list_of(t.extra_args);
     },
     false},
    {"activity",  // session_headers apply at once (read per request)
     [](const config::OrchestratorCfg& o) {
       const auto& a = o.activity;
       return std::string(a.enabled ? "on" : "off") + " max_records=" + std::to_string(a.max_records) +
              " max_age_days=" + std::to_string(a.max_age_days) + " max_mib=" + std::to_string(a.max_mib);
     }},
    {"capture",
     [](const config::OrchestratorCfg& o) {
       return std::string(o.capture.enabled ? "on" : "off") + " max_mib=" + std::to_string(o.capture.max_mib);
     }},
};

}  // namespace

std::vector<std::string> needs_restart(const config::OrchestratorCfg& a, const config::OrchestratorCfg& b) {
  std::vector<std::string> out;
  for (const auto& f : kFixedAtStart) {
    const auto from = f.render(a), to = f.render(b);
    if (from == to) continue;
    out.push_back(std::string(f.key) + (f.show_values ? ": " + from + " -> " + to : std::string(": changed")) +
                  " (needs a restart)");
  }
  // A removed peer's models go at once (carry_imported); a new one is asked only at start.
  for (const auto& p : b.peers) {
    const auto known = [&p](const config::PeerCfg& q) { return q.url == p.url; };
    if (std::none_of(a.peers.begin(), a.peers.end(), known))
      out.push_back("peers: " + p.url + " added (needs a restart to import its models)");
  }
  return out;
}

std::string config_files_stamp(const fs::path& file, const config::OrchestratorCfg& orch) {
  std::string out;
  std::error_code ec;
  if (!file.empty())
    out += file.string() + ":" + std::to_string(fs::last_write_time(file, ec).time_since_epoch().count()) + "\n";
  stamp_dir(out, orch.profiles_dir);
  stamp_dir(out, orch.pipelines_dir);
  if (!orch.models_dir.empty()) stamp_dir(out, orch.models_dir);  // a model added or removed: rescan
  return out;
}

Reloader::Reloader(Runtime& rt, config::Source source, std::function<void(config::Config&)> overrides,
                   std::function<void(const ledger::SnapshotPtr&)> applied)
    : rt_(rt), source_(std::move(source)), overrides_(std::move(overrides)), applied_(std::move(applied)),
      shared_(std::make_shared<Shared>()) {}

Reloader::~Reloader() = default;

asio::awaitable<ReloadReport> Reloader::reload() {
  auto shared = shared_;
  asio::steady_timer gap(rt_.ioc());
  while (shared->busy) {  // one reload at a time; bounded by the reload in progress
    gap.expires_after(std::chrono::milliseconds(20));
    boost::system::error_code ec;
    co_await gap.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  shared->busy = true;
  ReloadReport rep;
  ledger::SnapshotPtr running = rt_.snapshot();  // this reload's base, alive until it returns
  const bool accept_unsettled = shared->retries >= kMaxRetries;
  auto next = co_await asio::co_spawn(shared->planner.get_executor(),
                                      prepare_on(source_, overrides_, running, accept_unsettled), asio::use_awaitable);
  if (!next.deferred.empty()) {  // nothing is taken away or restarted while a file is half written
    rep.deferred = true;
    rep.errors.push_back(next.deferred + "; the reload runs again in " + std::to_string(kRetryAfter.count()) + " s");
    spdlog::warn("reload: deferred: {}", rep.errors.back());
    schedule_retry();
    shared->busy = false;
    co_return rep;
  }
  shared->retries = 0;
  rep.errors = std::move(next.errors);
  if (next.options) {
    rep.needs_restart = needs_restart(running->config.orch, next.config.orch);
    for (const auto& n : rep.needs_restart) spdlog::warn("reload: {}", n);
    auto snap = ledger::make_snapshot(std::move(next.config), std::move(next.plan));
    // The door follows in the supervisor's turn: no request is resolved in one version and
    // admitted in the other. (Named, not temporaries of the co_await: GCC 12 destroys a
    // temporary lambda's captures there once too often.)
    std::function<void()> switched = [this, snap] {
      rt_.publish(snap);
      if (applied_) applied_(snap);
    };
    auto cfg = ledger::config_of(snap);
    rep.diff = co_await rt_.sup().reload(std::move(cfg), std::move(*next.options), std::move(switched));
    rep.ok = true;
  }
  if (!rep.ok) spdlog::error("reload: the new configuration is invalid; nothing changed");
  shared->busy = false;
  co_return rep;
}

void Reloader::schedule_retry() {
  auto shared = shared_;
  if (shared->retry_pending) return;  // one retry at a time: the next reload may defer again
  shared->retry_pending = true;
  ++shared->retries;
  auto retry = [this, shared]() -> asio::awaitable<void> {
    asio::steady_timer t(rt_.ioc());
    t.expires_after(kRetryAfter);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    shared->retry_pending = false;
    if (!ec) co_await reload();
  };
  asio::co_spawn(rt_.ioc(), std::move(retry), asio::detached);
}

void Reloader::watch(std::chrono::milliseconds interval) {
  // Stamped now, before the door listens: stamped when the loop first ran, a file changed just
  // after the door said it was ready was taken for the starting state and never reloaded.
  std::string first = config_files_stamp(source_.file, rt_.snapshot()->config.orch);
  auto loop = [this, interval, shared = shared_, last = std::move(first)]() mutable -> asio::awaitable<void> {
    asio::steady_timer t(rt_.ioc());
    for (;;) {
      t.expires_after(interval);
      boost::system::error_code ec;
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      auto now = config_files_stamp(source_.file, rt_.snapshot()->config.orch);
      if (now == last) continue;
      last = std::move(now);
      spdlog::info("reload: a configuration file changed");
      co_await reload();
    }
  };
  asio::co_spawn(rt_.ioc(), std::move(loop), asio::detached);
}

}  // namespace kevlaya::runtime
