// ToolsHost: the one model-less llama-server that answers llama-server's /tools (its built-in
// tools and MCP servers, config::ToolsCfg) for the door. It holds no model and no GPU memory, so
// it runs beside any child and never takes part in a switch. Spawned as every child is (its own
// process group, a per-start key, a state file so a restarted door reaps it), restarted after an
// exit with backoff, stopped SIGTERM -> grace -> SIGKILL.
#pragma once
#include <utility>  // before asio: awaitable.hpp uses std::exchange
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {

struct ToolsHostOptions {
  config::ToolsCfg tools;
  std::string binary;              // the server binary (name on PATH or path)
  std::filesystem::path log_dir;   // its log: log_dir/@tools.log; empty = none
  std::filesystem::path state_dir; // its state file; empty = none
};

class ToolsHost {
 public:
  // Everything runs on `ioc`'s single thread (the door's); `ioc` must outlive the host.
  ToolsHost(boost::asio::io_context& ioc, ToolsHostOptions o);
  ~ToolsHost();  // a host never stopped is killed (its group) by the child's own safety net
  ToolsHost(const ToolsHost&) = delete;
  ToolsHost& operator=(const ToolsHost&) = delete;

  // Starts the host and keeps it running (restart after 0.5 s, doubling to 30 s). Idempotent.
  void start();
  // Stops the host and keeps it stopped; returns once the process is reaped.
  boost::asio::awaitable<void> stop();
  // Where the serving host listens (its key in api_key); nullopt while it starts or is down.
  std::optional<upstream::Endpoint> endpoint() const;
  // Why it is not serving now ("" when serving or not started); for the door's 503.
  std::string last_error() const;
  // The first start has ended, served or failed (the door's /health waits for it, as llama-server
  // answers only once its tools are set up).
  bool settled() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kevlaya::supervisor
