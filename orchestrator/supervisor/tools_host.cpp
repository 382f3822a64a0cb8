#include "supervisor/tools_host.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/random.hpp"
#include "config/backend.hpp"
#include "supervisor/child.hpp"
#include "supervisor/process_effects.hpp"

namespace kevlaya::supervisor {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
constexpr std::size_t kKeyBytes = 24;
constexpr auto kBackoffFirst = 500ms;
constexpr std::chrono::milliseconds kBackoffMax = 30s;
constexpr double kStopGraceS = 2.0;  // it holds no state to save: a stop should not wait on a slow tool
// The name its log and state file go under: not a valid profile name, so never one of theirs.
constexpr const char* kName = "@tools";

// The tools host's argv (binary first) for `port` and `key`: llama-server with no model.
std::vector<std::string> tools_host_argv(const ToolsHostOptions& o, int port, const std::string& key) {
  std::vector<std::string> a = {o.binary, "--host", "127.0.0.1", "--port", std::to_string(port)};
  if (!key.empty()) a.insert(a.end(), {"--api-key", key});
  if (!o.tools.builtin.empty()) a.insert(a.end(), {"--tools", o.tools.builtin});
  if (!o.tools.mcp_servers.empty()) a.insert(a.end(), {"--mcp-servers-config", o.tools.mcp_servers.string()});
  if (!o.tools.mcp_servers_json.empty()) a.insert(a.end(), {"--mcp-servers-json", o.tools.mcp_servers_json});
  a.insert(a.end(), o.tools.extra_args.begin(), o.tools.extra_args.end());
  return a;
}
}  // namespace

class ToolsHost::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& ioc, ToolsHostOptions o) : ioc_(ioc), opts_(std::move(o)), wait_(ioc), stopped_(ioc) {}

  asio::awaitable<void> run();
  asio::awaitable<void> stop();

  asio::io_context& ioc_;
  ToolsHostOptions opts_;
  asio::steady_timer wait_;     // a serving host's exit, or the backoff; cancelled by stop()
  asio::steady_timer stopped_;  // cancelled when run() has ended
  std::shared_ptr<Child> child_;
  std::optional<upstream::Endpoint> endpoint_;
  std::string error_;
  bool started_ = false, running_ = false, stopping_ = false;
  int starts_ = 0;

 private:
  // One spawn, until it fails to start or exits; the endpoint is set while it serves.
  asio::awaitable<bool> serve_once();
};

asio::awaitable<bool> ToolsHost::Impl::serve_once() {
  ChildOptions o;
  const std::string key = random_hex(kKeyBytes);
  const int port = pick_free_port("127.0.0.1");
  o.profile = config::command_profile(kName, tools_host_argv(opts_, port, key));  // no --model: a router
  o.profile.stop.grace_s = kStopGraceS;
  o.host = "127.0.0.1";
  o.port = port;
  o.api_key = key;  // masked in its log lines and state file like a child's
  o.log_dir = opts_.log_dir;
  o.state_dir = opts_.state_dir;
  auto child = Child::create(ioc_, o);
  child_ = child;
  auto exited = std::make_shared<bool>(false);
  std::weak_ptr<Impl> weak = weak_from_this();
  child->on_unexpected_exit([weak, exited](ChildFailure f) {
    *exited = true;
    auto self = weak.lock();
    if (!self) return;
    self->error_ = "the tools host exited: " + f.message;
    self->wait_.cancel();
  });
  ++starts_;
  const auto out = co_await child->start();
  const bool ok = out.ok();
  if (ok && !stopping_) {
    upstream::Endpoint ep("127.0.0.1", static_cast<std::uint16_t>(port));
    ep.api_key = key;
    endpoint_ = ep;
    error_.clear();
    spdlog::info("tools host ready on 127.0.0.1:{} (pid {})", port, child->pid());
    wait_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    while (!*exited && !stopping_) co_await wait_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    endpoint_.reset();
  } else if (!ok) {
    error_ = "the tools host did not start: " + out.failure.message;
  }
  if (!error_.empty() && !stopping_) spdlog::warn("{}", error_);
  co_await child->stop();  // reaps an exited one too
  child_.reset();
  co_return ok;
}

asio::awaitable<void> ToolsHost::Impl::run() {
  auto self = shared_from_this();
  auto backoff = std::chrono::milliseconds(kBackoffFirst);
  while (!stopping_) {
    if (co_await serve_once()) backoff = kBackoffFirst;  // it served: the next failure starts over
    if (stopping_) break;
    wait_.expires_after(backoff);
    boost::system::error_code ec;
    co_await wait_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    backoff = std::min(backoff * 2, kBackoffMax);
  }
  running_ = false;
  stopped_.cancel();
}

asio::awaitable<void> ToolsHost::Impl::stop() {
  stopping_ = true;
  wait_.cancel();  // run() then stops the child: SIGTERM, grace, SIGKILL on its group
  if (!running_) co_return;
  stopped_.expires_at(asio::steady_timer::time_point::max());
  boost::system::error_code ec;
  while (running_) co_await stopped_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

ToolsHost::ToolsHost(asio::io_context& ioc, ToolsHostOptions o) : impl_(std::make_shared<Impl>(ioc, std::move(o))) {}

ToolsHost::~ToolsHost() = default;

void ToolsHost::start() {
  if (impl_->started_) return;
  impl_->started_ = impl_->running_ = true;
  asio::co_spawn(impl_->ioc_, impl_->run(), asio::detached);
}

asio::awaitable<void> ToolsHost::stop() { co_await impl_->stop(); }

std::optional<upstream::Endpoint> ToolsHost::endpoint() const { return impl_->endpoint_; }

std::string ToolsHost::last_error() const {
  if (impl_->endpoint_) return "";
  if (impl_->error_.empty() && impl_->started_) return "the tools host is starting";
  return impl_->error_;
}

bool ToolsHost::settled() const { return impl_->endpoint_ || !impl_->error_.empty() || impl_->starts_ > 1; }

}  // namespace kevlaya::supervisor
