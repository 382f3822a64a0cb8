#include "remote/monitor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace kevlaya::remote {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr auto kFirstBackoff = milliseconds(500);
constexpr std::size_t kPoolIdle = 16;
constexpr const char* kFallbackPath = "/v1/models";

// How long to wait after a check. Reachable: health.check_interval_s. After the n-th failure in a
// row: 0.5 s doubling per failure, capped at health.backoff_max_s.
milliseconds next_delay(const config::HealthCfg& h, int failures) {
  if (failures <= 0) return std::chrono::seconds(h.check_interval_s);
  const milliseconds cap = std::chrono::seconds(h.backoff_max_s);
  milliseconds d = kFirstBackoff;
  for (int i = 1; i < failures && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

}  // namespace

std::string_view to_string(State s) {
  switch (s) {
    case State::unknown: return "unknown";
    case State::reachable: return "reachable";
    case State::unreachable: return "unreachable";
  }
  return "unknown";
}

struct Remote {
  Remote(asio::any_io_executor ex, const config::Profile& p) : profile(p), timer(ex) {}
  config::Profile profile;
  upstream::Endpoint endpoint;
  Health status;
  asio::steady_timer timer;  // the wait between checks; cancelled to check at once
};

struct Monitor::Impl : std::enable_shared_from_this<Monitor::Impl> {
  asio::any_io_executor strand;
  std::map<std::string, std::unique_ptr<Remote>> remotes;
  OnChange on_change;
  bool stopped = false;

  asio::awaitable<void> loop(Remote& r);
  asio::awaitable<Result<int>> probe(Remote& r, const std::string& path);
  asio::awaitable<void> check(Remote& r);
};

asio::awaitable<Result<int>> Monitor::Impl::probe(Remote& r, const std::string& path) {
  upstream::Request req;
  req.target = path;
  req.timeout = milliseconds(r.profile.health.probe_timeout_ms);
  auto res = co_await upstream::fetch(strand, r.endpoint, std::move(req));
  if (!res) co_return res.error();
  co_return res->status;
}

asio::awaitable<void> Monitor::Impl::check(Remote& r) {
  const auto& h = r.profile.health;
  auto got = co_await probe(r, r.status.checked_path);
  // A server without /health (vLLM has one, some OpenAI-compatible servers do not): ask /v1/models.
  if (got && *got == 404 && r.status.checked_path == "/health") {
    r.status.checked_path = kFallbackPath;
    got = co_await probe(r, r.status.checked_path);
  }
  const State before = r.status.state;
  if (got && *got == h.status) {
    r.status.state = State::reachable;
    r.status.failures = 0;
    r.status.last_error.clear();
  } else {
    r.status.state = State::unreachable;
    ++r.status.failures;
    r.status.last_error = got ? "GET " + r.status.checked_path + " answered HTTP " + std::to_string(*got)
                              : got.error().message;
  }
  r.status.next_check = Clock::now() + next_delay(h, r.status.failures);
  if (r.status.state != before && !stopped) {
    if (r.status.state == State::reachable)
      spdlog::info("{}: remote {} is reachable", r.profile.name, r.status.url);
    else
      spdlog::warn("{}: remote {} is unreachable: {}", r.profile.name, r.status.url, r.status.last_error);
    if (on_change) on_change(r.profile.name, r.status);
  }
}

asio::awaitable<void> Monitor::Impl::loop(Remote& r) {
  auto self = shared_from_this();
  while (!stopped) {
    co_await check(r);
    if (stopped) break;
    boost::system::error_code ec;
    r.timer.expires_at(r.status.next_check);
    co_await r.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

Monitor::Monitor(asio::any_io_executor strand, const std::vector<config::Profile>& remotes, OnChange on_change)
    : impl_(std::make_shared<Impl>()) {
  impl_->strand = strand;
  impl_->on_change = std::move(on_change);
  for (const auto& p : remotes) {
    auto r = std::make_unique<Remote>(strand, p);
    r->status.url = p.url;
    r->status.checked_path = p.health.path;
    if (const auto u = config::parse_http_url(p.url, nullptr)) {
      r->endpoint.host = u->host;
      r->endpoint.port = static_cast<std::uint16_t>(u->port);
      r->endpoint.base_path = u->base_path;
    }
    r->endpoint.api_key = p.api_key;
    r->endpoint.pool = std::make_shared<upstream::ConnectionPool>(kPoolIdle);
    impl_->remotes.emplace(p.name, std::move(r));
  }
}

Monitor::~Monitor() { stop(); }

void Monitor::start() {
  for (auto& [name, r] : impl_->remotes) asio::co_spawn(impl_->strand, impl_->loop(*r), asio::detached);
}

void Monitor::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  for (auto& [name, r] : impl_->remotes) {
    r->timer.cancel();
    if (r->endpoint.pool) r->endpoint.pool->close();
  }
}

const Health* Monitor::status(const std::string& profile) const {
  const auto it = impl_->remotes.find(profile);
  return it == impl_->remotes.end() ? nullptr : &it->second->status;
}

upstream::Endpoint Monitor::endpoint(const std::string& profile) const {
  const auto it = impl_->remotes.find(profile);
  return it == impl_->remotes.end() ? upstream::Endpoint() : it->second->endpoint;
}

void Monitor::suspect(const std::string& profile) {
  const auto it = impl_->remotes.find(profile);
  if (it == impl_->remotes.end() || impl_->stopped) return;
  it->second->status.next_check = Clock::now();
  it->second->timer.cancel();  // the loop checks at once (a check in flight is not doubled)
}

}  // namespace kevlaya::remote
