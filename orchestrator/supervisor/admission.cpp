// The one admission point (docs/supervisor.md): SupervisorImpl::admit checks a request, queues it
// and grants a free slot through the scheduler at once when there is one; wait() lets a queued one
// wait until its grant, deadline or cancel; leases are granted and released here.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/clock.hpp"
#include "config/backend.hpp"
#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

namespace {
constexpr std::size_t kRecentCalls = 4;  // what predict_alternation reads
}  // namespace

// The one admission point: the checks, the queue, and a grant when a slot is free now (reschedule).
Admission SupervisorImpl::admit(std::string model, std::optional<Clock::time_point> until,
                                std::shared_ptr<upstream::CancelToken> cancel, Asker who) {
  if (cancel && cancel->cancelled()) return make_error(Errc::unavailable, "client disconnected while waiting");
  if (shutting_down_) return make_error(Errc::unavailable, "shutting down");
  // Exact names and aliases only: the door resolves a call's `model` (fallbacks included) before it
  // asks, and an admin's load or a pipeline stage names a model exactly.
  const config::Profile* p = cfg_->find_profile(model);
  if (!p) return make_error(Errc::not_found, "unknown model '" + model + "'");
  if (!config::backend_of(*p).spawns) return remote_lease(*p);  // never queued behind a switch
  const std::string& child = child_of(p->name);
  auto& ps = children_[child];
  auto now = Clock::now();
  if (now < ps.failed_until) {
    Error e = ps.last_failure ? ps.last_failure->to_error(Errc::profile_failed) : Error{};
    e.code = Errc::profile_failed;
    e.message = p->name + ": failed after repeated crashes; cooling down (last: " + e.message + ")";
    e.retry_after_s = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(ps.failed_until - now).count());
    return e;
  }
  if (cfg_->orch.queue.max_depth > 0 && queue_.size() >= static_cast<std::size_t>(cfg_->orch.queue.max_depth))
    return make_error(Errc::queue_full,
                      "queue is full (" + std::to_string(queue_.size()) + " requests waiting for a model)",
                      "retry later");
  auto w = std::make_shared<Waiter>();
  w->id = next_id_++;
  w->profile = p->name;
  w->health = p->health;
  w->child = child;
  w->enqueued = now;
  w->deadline = until.value_or(now + std::chrono::seconds(cfg_->orch.queue.max_wait_s));
  note_call(child, who);
  queue_.push_back(w);
  reschedule();
  if (w->result) return std::move(*w->result);  // a free slot of a ready child: granted at once
  if (cancel) {  // the caller left: leave the queue now, so nobody loads a model for nobody
    cancel->set_hook([weak = weak_from_this(), w] {
      if (auto s = weak.lock()) asio::post(s->strand_, [s, w] { s->abandon(w); });
    });
  }
  return w;
}

asio::awaitable<Result<Lease>> SupervisorImpl::wait(std::shared_ptr<Waiter> w,
                                                    std::shared_ptr<upstream::CancelToken> cancel) {
  auto self = shared_from_this();
  if (!w->result) w->timer.emplace(strand_);
  while (!w->result) {
    boost::system::error_code ec;
    w->timer->expires_at(w->deadline);
    co_await w->timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!w->result && Clock::now() >= w->deadline) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), w), queue_.end());
      w->result.emplace(make_error(Errc::timeout, "no free slot of '" + w->profile + "' before the deadline",
                                   "the model is busy or still loading; raise the deadline"));
      reschedule();
    }
  }
  if (cancel) cancel->clear_hook();
  co_return std::move(*w->result);
}

// Switch ahead guesses the next call of a dialog that alternates between two models (B, A, B, A).
// Only a call that finds nobody queued continues such a dialog; a call that comes while others
// wait is part of a burst, whose next call is already here: the history restarts, so no guess
// stops a model that a burst still needs. An explicit load clears it too: the operator chose.
void SupervisorImpl::note_call(const std::string& child, Asker who) {
  if (who == Asker::load || !queue_.empty()) {
    recent_.clear();
    return;
  }
  if (recent_.size() == kRecentCalls) recent_.erase(recent_.begin());
  recent_.push_back(child);
}

asio::awaitable<Result<Lease>> SupervisorImpl::acquire(std::string model, std::optional<Clock::time_point> until,
                                                       std::shared_ptr<upstream::CancelToken> cancel, Asker who) {
  auto self = shared_from_this();
  auto admitted = admit(std::move(model), until, cancel, who);
  if (auto* r = std::get_if<Result<Lease>>(&admitted)) co_return std::move(*r);
  co_return co_await wait(std::get<std::shared_ptr<Waiter>>(std::move(admitted)), std::move(cancel));
}

void SupervisorImpl::abandon(const std::shared_ptr<Waiter>& w) {
  if (w->result) return;  // served or failed meanwhile; a lease is released by its owner
  queue_.erase(std::remove(queue_.begin(), queue_.end(), w), queue_.end());
  w->result.emplace(make_error(Errc::unavailable, "client disconnected while waiting"));
  w->wake();
  reschedule();
}

void SupervisorImpl::release_to(std::uint64_t waiter_id, ChildState& ps, Clock::time_point now) {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& w) { return w->id == waiter_id; });
  if (it == queue_.end()) return;
  auto w = *it;
  queue_.erase(it);
  auto s = std::make_shared<LeaseShared>();
  s->id = next_id_++;
  s->profile = w->profile;
  s->child = ps.spec->name;
  s->endpoint = ps.endpoint;
  s->health = std::move(w->health);  // a shared child's member: its own settings
  if (config::backend_of(ps.settings()).renames_model) s->upstream_model = w->profile;
  s->owner = weak_from_this();
  ps.leases[s->id] = s;
  ++ps.in_flight;
  // The part of the wait spent bringing the child up (0 when it was already ready).
  std::int64_t switch_ms = ps.became_ready_at > w->enqueued ? whole_ms(ps.became_ready_at - w->enqueued) : 0;
  const auto lora = ps.spec->scales.find(w->profile);  // a shared child's member: its adapters on
  w->result.emplace(Lease(std::move(s), whole_ms(now - w->enqueued), switch_ms,
                          lora != ps.spec->scales.end() ? lora->second : std::vector<ledger::LoraScale>{}));
  w->wake();
}

void SupervisorImpl::on_release(const std::string& child, std::uint64_t lease_id, std::int64_t keep_alive_s,
                                Context ctx) {
  auto it = children_.find(child);
  if (it == children_.end() || it->second.leases.erase(lease_id) == 0) return;  // cut earlier
  auto& ps = it->second;
  if (ctx.tokens >= 0) {  // its slots hold about the last `parallel` calls' contexts
    ps.contexts.push_back(ctx.tokens);
    while (ps.contexts.size() > static_cast<std::size_t>(std::max(1, ps.settings().parallel))) ps.contexts.pop_front();
  }
  if (ctx.prefill_us_per_token > 0) ps.prefill_s_per_token = static_cast<double>(ctx.prefill_us_per_token) / 1e6;
  note_keep_alive(ps, keep_alive_s);
  if (--ps.in_flight == 0) ps.idle_since = Clock::now();
  reschedule();
}

void SupervisorImpl::refuse(std::uint64_t waiter_id, const Action& a) {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& w) { return w->id == waiter_id; });
  if (it == queue_.end()) return;
  auto w = *it;
  queue_.erase(it);
  const auto wait_s = std::chrono::duration_cast<std::chrono::seconds>(a.retry_after).count() + 1;
  Error e = make_error(Errc::unavailable,
                       w->profile + " needs a child that is protected (evict: protect) and in use; it may go in about " +
                           std::to_string(wait_s) + " s, after this request's deadline",
                       "retry after the time in Retry-After, or raise the request's timeout (queue.max_wait_s)");
  e.retry_after_s = static_cast<int>(wait_s);
  w->result.emplace(std::move(e));
  w->wake();
}

void SupervisorImpl::fail_queued(const std::string& child, const Error& e) {
  std::erase_if(queue_, [&](const std::shared_ptr<Waiter>& w) {  // (a wake is posted: the queue stays)
    if (w->child != child) return false;
    w->result.emplace(e);
    w->wake();
    return true;
  });
}

void SupervisorImpl::cut_leases(ChildState& ps, const Error& e) {
  for (auto& [id, weak] : ps.leases) {
    if (auto s = weak.lock()) {
      s->crash = e;
      s->crashed.store(true, std::memory_order_release);
    }
  }
  ps.leases.clear();
  ps.in_flight = 0;
}

}  // namespace kevlaya::supervisor
