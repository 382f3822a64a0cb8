// Remote profiles (backend: remote) inside the Supervisor: no child, no queue, no scheduler. They
// hold no local GPU residency, so a local switch never waits for them and they never wait for
// one: acquire() answers at once with a lease on the remote's endpoint, or with the reason the
// remote cannot be used now (unreachable at its last check).
#include <spdlog/spdlog.h>

#include "config/backend.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

void SupervisorImpl::start_remotes() {
  std::vector<config::Profile> remotes;
  for (const auto& p : cfg_->profiles)
    if (!config::backend_of(p).spawns) remotes.push_back(p);
  if (remotes.empty()) return;
  remotes_ = std::make_unique<remote::Monitor>(strand_, remotes, [this](const std::string& name, const remote::Health& st) {
    Event e;  // on strand_ (the monitor runs there)
    e.type = Event::Type::remote;
    e.child = name;
    e.remote = st;
    events_->publish(std::move(e));
  });
  remotes_->start();
}

Result<Lease> SupervisorImpl::remote_lease(const config::Profile& p) {
  const remote::Health* st = remotes_ ? remotes_->status(p.name) : nullptr;
  if (!st) return make_error(Errc::internal, p.name + ": remote profile without a monitor");
  if (st->state == remote::State::unreachable) {
    Error e = make_error(Errc::unavailable,
                         p.name + ": remote " + st->url + " is unreachable (" + st->last_error + ")",
                         "kevlaya-orch checks it in the background and serves it again as soon as it "
                         "answers; GET /status shows its state");
    const auto left = std::chrono::ceil<std::chrono::seconds>(st->next_check - Clock::now()).count();
    e.retry_after_s = static_cast<int>(std::max<std::int64_t>(1, left));
    return e;
  }
  auto s = std::make_shared<LeaseShared>();
  s->id = next_id_++;
  s->profile = p.name;
  s->child = p.name;
  s->endpoint = remotes_->endpoint(p.name);
  s->health = p.health;
  s->upstream_model = p.remote_model.empty() ? p.name : p.remote_model;
  s->remote = true;
  s->owner = weak_from_this();  // on_release finds no child for it: a no-op
  return Lease(std::move(s), 0, 0);
}

void SupervisorImpl::add_remote_status(Snapshot& s) const {
  if (!remotes_) return;
  for (const auto& p : cfg_->profiles) {
    const remote::Health* st = remotes_->status(p.name);
    if (!st) continue;
    ProfileStatus ps;
    ps.name = p.name;
    ps.state = st->state == remote::State::reachable     ? Phase::ready
               : st->state == remote::State::unreachable ? Phase::failed
                                                         : Phase::starting;
    ps.remote = *st;
    if (st->state == remote::State::unreachable) {
      const auto left = std::chrono::ceil<std::chrono::seconds>(st->next_check - Clock::now()).count();
      ps.retry_after_s = static_cast<int>(std::max<std::int64_t>(1, left));
    }
    s.profiles.push_back(std::move(ps));
  }
}

}  // namespace kevlaya::supervisor
