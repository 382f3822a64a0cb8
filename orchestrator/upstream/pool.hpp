// Keep-alive connections to one child process (one start of it: a restarted child gets a new
// pool, so a connection to a previous process is never reused). fetch() and stream() take an idle
// connection when the endpoint has a pool and give it back after a complete keep-alive exchange;
// a connection serves one request at a time. Beast stays in upstream/*.cpp.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kevlaya::upstream {

class ConnectionPool {
 public:
  // At most `max_idle` idle connections are kept, each for at most `max_age` (below llama-server's
  // 5 s keep-alive timeout, so the child rarely closes one under us).
  explicit ConnectionPool(std::size_t max_idle = 32,
                          std::chrono::milliseconds max_age = std::chrono::milliseconds(3000));
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Closes the idle connections; connections given back later are closed, none is taken again.
  // Called when the child stops or dies. Idempotent, any thread.
  void close();
  std::size_t idle() const;      // idle connections now
  std::uint64_t reused() const;  // requests sent on a reused connection so far

  struct Impl;  // upstream/client.cpp
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevlaya::upstream
