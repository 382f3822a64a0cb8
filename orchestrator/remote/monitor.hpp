// Monitor: background health checks of the remote profiles, with backoff. Runs on the strand it is
// given (the supervisor's), so the supervisor reads a remote's state without a lock.
// A check is GET url+health.path (default /health; a 404 there switches to /v1/models, for servers
// without /health) that must answer health.status within health.probe_timeout_ms.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "remote/status.hpp"
#include "upstream/client.hpp"

namespace kevlaya::remote {

class Monitor {
 public:
  // Called on the strand when a remote's state changes (profile name, its new status).
  using OnChange = std::function<void(const std::string&, const Health&)>;
  // `strand`: a strand executor; every method must be called on it. Nothing runs before start().
  Monitor(boost::asio::any_io_executor strand, const std::vector<config::Profile>& remotes, OnChange on_change);
  ~Monitor();  // stops the checks
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  void start();  // one checking coroutine per remote
  void stop();   // ends every check loop (idempotent); a probe in flight ends within its timeout
  const Health* status(const std::string& profile) const;  // nullptr when not a remote profile
  // Where calls to the remote go: host, port, base path, key and a keep-alive pool.
  upstream::Endpoint endpoint(const std::string& profile) const;
  // A call to the remote failed on the connection: check it again now (not at the next interval).
  void suspect(const std::string& profile);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kevlaya::remote
