// Lease and the public Supervisor facade: each call hops onto the supervisor's strand.
#include <optional>
#include <typeinfo>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "supervisor/supervisor_impl.hpp"

namespace kevlaya::supervisor {

Lease::Lease(std::shared_ptr<LeaseShared> s, std::int64_t queue_ms, std::int64_t switch_ms,
             std::vector<ledger::LoraScale> lora)
    : s_(std::move(s)), queue_ms_(queue_ms), switch_ms_(switch_ms), lora_(std::move(lora)) {}

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    s_ = std::move(o.s_);
    queue_ms_ = o.queue_ms_;
    switch_ms_ = o.switch_ms_;
    lora_ = std::move(o.lora_);
  }
  return *this;
}

Lease::~Lease() { release(); }

bool Lease::crashed() const { return s_ && s_->crashed.load(std::memory_order_acquire); }

Error Lease::crash_error() const {
  if (!crashed()) return make_error(Errc::internal, "lease has not crashed");
  return s_->crash;
}

void Lease::release() {
  if (!s_) return;
  if (auto owner = s_->owner.lock()) {
    const std::int64_t keep = s_->keep_alive_s.load(std::memory_order_relaxed);
    const Context ctx{s_->context_tokens.load(std::memory_order_relaxed),
                      s_->prefill_us_per_token.load(std::memory_order_relaxed)};
    asio::post(owner->strand_, [owner, child = s_->child, id = s_->id, keep, ctx] {
      owner->on_release(child, id, keep, ctx);
    });
  }
  s_.reset();
}

void Lease::set_keep_alive(std::int64_t seconds) {
  if (s_) s_->keep_alive_s.store(seconds, std::memory_order_relaxed);
}

void Lease::note_context(std::int64_t tokens, double prefill_tokens_per_s) const {
  if (!s_ || tokens < 0) return;
  s_->context_tokens.store(tokens, std::memory_order_relaxed);
  if (prefill_tokens_per_s > 0)
    s_->prefill_us_per_token.store(static_cast<std::int64_t>(1e6 / prefill_tokens_per_s), std::memory_order_relaxed);
}

Supervisor::Supervisor(asio::any_io_executor ex, config::ConfigPtr cfg, std::unique_ptr<Effects> effects,
                       SupervisorOptions opts)
    : impl_(std::make_shared<SupervisorImpl>(ex, std::move(cfg), std::move(effects), std::move(opts))) {}

Supervisor::~Supervisor() = default;

namespace {

// Boost 1.74's co_spawn needs a default-constructible result; Result<T> has none.
template <class T>
asio::awaitable<std::optional<T>> wrap(asio::awaitable<T> a) {
  co_return std::optional<T>(co_await std::move(a));
}

// Boost 1.74's any_executor::target<T>() casts without checking the type, so the type is checked here.
template <class T>
const T* target_as(const asio::any_io_executor& ex) {
  return ex.target_type() == typeid(T) ? ex.target<T>() : nullptr;
}

}  // namespace

bool SupervisorImpl::on_strand() const {
  if (const auto* s = target_as<asio::strand<asio::any_io_executor>>(strand_)) return s->running_in_this_thread();
  if (const auto* e = target_as<asio::io_context::executor_type>(strand_)) return e->running_in_this_thread();
  return false;  // another kind of executor: callers hop onto it
}

asio::awaitable<Result<Lease>> Supervisor::acquire(std::string model_or_alias,
                                                   std::optional<Clock::time_point> deadline,
                                                   std::shared_ptr<upstream::CancelToken> cancel) {
  if (impl_->on_strand()) {  // a caller on our strand (the door): no hop to admit
    auto admitted = impl_->admit(std::move(model_or_alias), deadline, cancel);
    if (auto* now = std::get_if<Result<Lease>>(&admitted)) co_return std::move(*now);
    // A named ticket: GCC 12 destroys a braced temporary in a co_await expression twice.
    Ticket queued{std::get<std::shared_ptr<Waiter>>(std::move(admitted))};
    co_return co_await wait(std::move(queued), std::move(cancel));
  }
  auto r = co_await asio::co_spawn(
      impl_->strand_, wrap(impl_->acquire(std::move(model_or_alias), deadline, std::move(cancel))),
      asio::use_awaitable);
  co_return std::move(*r);
}

std::optional<std::variant<Result<Lease>, Supervisor::Ticket>> Supervisor::admit_now(
    std::string model_or_alias, std::shared_ptr<upstream::CancelToken> cancel) {
  if (!impl_->on_strand()) return std::nullopt;
  auto admitted = impl_->admit(std::move(model_or_alias), std::nullopt, std::move(cancel));
  if (auto* now = std::get_if<Result<Lease>>(&admitted)) return std::move(*now);
  return Ticket{std::get<std::shared_ptr<Waiter>>(std::move(admitted))};
}

asio::awaitable<Result<Lease>> Supervisor::wait(Ticket t, std::shared_ptr<upstream::CancelToken> cancel) {
  auto r = co_await asio::co_spawn(impl_->strand_, wrap(impl_->wait(std::move(t.waiter), std::move(cancel))),
                                   asio::use_awaitable);
  co_return std::move(*r);
}

// An explicit load clears the switch-ahead history (Asker::load), so no guess undoes it.
asio::awaitable<Status> Supervisor::ensure_ready(std::string model_or_alias,
                                                 std::optional<Clock::time_point> deadline) {
  auto r = co_await asio::co_spawn(
      impl_->strand_, wrap(impl_->acquire(std::move(model_or_alias), deadline, nullptr, Asker::load)),
      asio::use_awaitable);
  auto& lease = *r;
  if (!lease) co_return lease.error();
  lease->release();
  co_return ok_status();
}

asio::awaitable<Status> Supervisor::unload(std::optional<std::string> model) {
  auto r = co_await asio::co_spawn(impl_->strand_, wrap(impl_->unload(std::move(model))), asio::use_awaitable);
  co_return std::move(*r);
}

void Supervisor::start_wanted() {
  asio::post(impl_->strand_, [impl = impl_] { impl->start_wanted(); });
}

const asio::any_io_executor& Supervisor::strand() const { return impl_->strand_; }

asio::awaitable<Snapshot> Supervisor::snapshot() {
  co_return co_await asio::co_spawn(impl_->strand_, impl_->snapshot(), asio::use_awaitable);
}

asio::awaitable<void> Supervisor::shutdown() {
  co_await asio::co_spawn(impl_->strand_, impl_->shutdown(), asio::use_awaitable);
}

// A reset can reach the client a moment before the kernel reports the exit of the process that
// closed it: a child found alive is checked again, kAliveChecks times kAliveCheckGap apart.
asio::awaitable<bool> Supervisor::check_alive(const Lease& lease) {
  constexpr int kAliveChecks = 25;
  constexpr auto kAliveCheckGap = std::chrono::milliseconds(20);
  if (!lease.valid()) co_return false;
  asio::steady_timer gap(co_await asio::this_coro::executor);
  for (int i = 1;; ++i) {
    auto task = [impl = impl_, s = lease.shared()]() -> asio::awaitable<bool> { co_return impl->check_alive(*s); };
    const bool crashed = co_await asio::co_spawn(impl_->strand_, std::move(task), asio::use_awaitable);
    // A remote has no process to look at: it was checked again at once, once.
    if (crashed || lease.remote() || i >= kAliveChecks) co_return crashed;
    gap.expires_after(kAliveCheckGap);
    boost::system::error_code ec;
    co_await gap.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

asio::awaitable<bool> Supervisor::check_responsive(const Lease& lease) {
  if (!lease.valid()) co_return false;
  co_return co_await asio::co_spawn(impl_->strand_, impl_->check_responsive(lease.shared()), asio::use_awaitable);
}

upstream::StreamOptions Supervisor::call_options(const Lease& lease, std::chrono::milliseconds deadline) {
  const auto& h = lease.shared()->health;
  upstream::StreamOptions o;
  o.deadline = deadline;
  o.first_byte_timeout = std::chrono::seconds(h.first_byte_timeout_s);
  o.idle_timeout = std::chrono::seconds(h.chunk_timeout_s);
  o.check_after = std::chrono::seconds(h.hung_check_s);
  o.still_alive = liveness_probe(lease);
  return o;
}

std::function<asio::awaitable<bool>()> Supervisor::liveness_probe(const Lease& lease) {
  return [impl = impl_, s = lease.shared()]() -> asio::awaitable<bool> {
    if (!s || s->remote) co_return true;
    co_return !co_await asio::co_spawn(impl->strand_, impl->check_responsive(s), asio::use_awaitable);
  };
}

}  // namespace kevlaya::supervisor
