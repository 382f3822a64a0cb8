// Supervisor::reload (docs/lifecycle.md): a new configuration applied on the supervisor's strand.
// Children whose settings did not change keep running untouched (same pid); changed ones drain and
// are started again with the new profile when next needed; removed ones drain and stop, and what
// was queued for them fails with not_found; new profiles are routable at once. Remote profiles
// (no child) are diffed alike, and their health monitor is rebuilt when one of them changed.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/strings.hpp"
#include "config/backend.hpp"
#include "config/fingerprint.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

namespace {

// Remote profiles have no child: they are compared by the same key, and their monitor is rebuilt
// when one of them changed (a new URL must be checked and used, a new remote must be monitored).
std::map<std::string, std::string> remote_keys(const config::Config& c) {
  std::map<std::string, std::string> out;
  for (const auto& p : c.profiles)
    if (!config::backend_of(p).spawns) out[p.name] = config::child_key(p);
  return out;
}

void diff_remotes(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after,
                  ReloadDiff& diff) {
  for (const auto& [name, key] : before) {
    const auto it = after.find(name);
    if (it == after.end()) diff.removed.push_back(name);
    else (it->second == key ? diff.unchanged : diff.changed).push_back(name);
  }
  for (const auto& [name, key] : after)
    if (!before.count(name)) diff.added.push_back(name);
}

std::string names(const std::vector<std::string>& v) { return v.empty() ? "none" : join(v, ", "); }

}  // namespace

// A child that must go (its profile changed or was removed): drained now if ready (in-flight
// requests finish), at ready if still starting; anything already stopping is left alone.
void SupervisorImpl::retire(const std::string& name, ChildState& ps, const char* reason) {
  if (ps.phase == Phase::ready) {
    set_phase(name, ps, Phase::draining);
  } else if (ps.phase == Phase::starting) {
    ps.stale = true;  // do_start drains it as soon as it is ready
  }
  if (is_alive(ps.phase) && ps.unload_reason.empty()) ps.unload_reason = reason;
}

// Waiting requests follow their profile to its child in the new configuration (a shared-base
// group may have formed or split); those whose profile is gone fail with not_found. A waiter's
// profile was resolved once, at admission: it is looked up by name, never again as an alias.
void SupervisorImpl::requeue() {
  std::erase_if(queue_, [&](const std::shared_ptr<Waiter>& w) {  // (a wake is posted: the queue stays)
    if (const auto* c = spec_of(w->profile)) {  // by name
      w->child = c->name;
      return false;
    }
    w->result.emplace(make_error(Errc::not_found, "model '" + w->profile + "' was removed by a configuration reload"));
    w->wake();
    return true;
  });
}

asio::awaitable<ReloadDiff> SupervisorImpl::reload(config::ConfigPtr cfg, SupervisorOptions opts,
                                                   std::function<void()> switched) {
  auto self = shared_from_this();
  ReloadDiff diff;
  const auto remotes_before = remote_keys(*cfg_);
  cfg_ = std::move(cfg);
  effects_->configure(cfg_);  // what the effects predict and prefetch follows the new version
  if (switched) switched();     // and the door's, in this turn
  opts.serial_executor = opts_.serial_executor;  // a property of the executor, fixed at construction
  opts_ = std::move(opts);
  std::map<std::string, ledger::ChildPtr> next;
  for (auto& c : ledger::bind_children(cfg_, opts_.children)) next[c->name] = std::move(c);
  for (auto& [name, ps] : children_) {
    if (ps.removed) continue;
    const auto it = next.find(name);
    if (it == next.end()) {
      diff.removed.push_back(name);
      ps.removed = true;
      ps.spec = ledger::detach(*ps.spec);  // its own copy: the old version goes
      retire(name, ps, "reload");
    } else if (ps.spec->key == it->second->key) {  // what the child runs
      diff.unchanged.push_back(name);
      ps.spec = it->second;
    } else {
      diff.changed.push_back(name);
      ps.spec = it->second;
      ps.failures.clear();  // a fixed profile may start at once
      ps.failed_until = ps.not_before = Clock::time_point{};
      retire(name, ps, "reload");
    }
  }
  for (const auto& [name, c] : next) {
    auto& ps = children_[name];
    if (ps.spec && !ps.removed) continue;
    diff.added.push_back(name);
    ps.removed = false;
    ps.stale = is_alive(ps.phase);  // a removed child still stopping is replaced, not reused
    ps.spec = c;
  }
  const auto remotes_after = remote_keys(*cfg_);
  diff_remotes(remotes_before, remotes_after, diff);
  if (remotes_after != remotes_before) {  // in-flight remote calls keep their endpoint copy
    if (remotes_) remotes_->stop();
    remotes_.reset();
    start_remotes();
  }
  seed_loads();
  requeue();
  spdlog::info("reload: changed: {}; added: {}; removed: {}; unchanged: {}", names(diff.changed), names(diff.added),
               names(diff.removed), names(diff.unchanged));
  Event e;
  e.type = Event::Type::reload;
  e.changed = diff.changed;
  e.added = diff.added;
  e.removed = diff.removed;
  events_->publish(std::move(e));
  notify_watchers();
  reschedule();
  co_return diff;
}

asio::awaitable<ReloadDiff> Supervisor::reload(config::ConfigPtr cfg, SupervisorOptions opts,
                                               std::function<void()> switched) {
  co_return co_await asio::co_spawn(impl_->strand_, impl_->reload(std::move(cfg), std::move(opts), std::move(switched)),
                                    asio::use_awaitable);
}

}  // namespace kevlaya::supervisor
