// Test harness for the REST door: a scripted upstream (thread per connection, blocking Beast),
// a fake Effects that "starts" children pointing at it, a real Supervisor and http::Server on
// loopback; requests go through support/http_client.hpp.
#pragma once
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <atomic>
#include <condition_variable>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "http/server.hpp"
#include "supervisor/supervisor.hpp"
#include "support/fake_effects.hpp"
#include "support/http_client.hpp"  // HttpReply, http_request, RawClient

namespace kevlaya::test {

using nlohmann::json;
using namespace std::chrono_literals;

// A latch-like flag a test thread can wait on (with a timeout, so a bug fails instead of hanging).
class Event {
 public:
  void set();
  bool wait(std::chrono::milliseconds timeout = 10s);
  bool is_set();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// The scripted child server. Behaviour is chosen by the request body's "test_mode" (or a last
// message whose content is "test_mode:MODE", for translated APIs):
//   (none)        200 JSON echoing the received body under "echo", with llama-server timings
//   "stream"      SSE: chunk-1, then waits for `release_second`, chunk-2, [DONE] (final has timings)
//   "stream_hold" SSE: chunk-1, then blocks reading until the door closes (sets `saw_disconnect`)
//   "hold"        waits for `release_hold` before answering 200 (counts `held`)
//   "error"       400 {"error":{...}} like llama-server
//   "missing"     404 File Not Found (a path this llama-server build lacks)
//   "crash"       runs `on_crash`, then closes the connection without answering
//   "huge"        200 with a JSON body of `huge_bytes` (Content-Length), written as fast as read
//   "huge_error"  the same with status 500
class ScriptedUpstream {
 public:
  ScriptedUpstream();
  ~ScriptedUpstream();
  std::uint16_t port() const { return port_; }

  Event release_second;
  Event saw_disconnect;
  void release_hold();
  bool wait_held(int n, std::chrono::milliseconds timeout = 10s);  // n requests are holding
  std::function<void()> on_crash;
  std::atomic<int> requests{0};
  std::atomic<std::uint64_t> huge_bytes{64ull << 20};

 private:
  void serve(boost::asio::ip::tcp::socket s);
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
  bool hold_released_ = false;
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
};

// The last log line of the "broken" profile's failed start (DoorOptions::broken_profile).
inline constexpr const char* kBrokenLogLine = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4242 MiB failed";

struct DoorOptions {
  int load_ms = 20;                  // fake child start time
  std::vector<std::string> api_keys;
  std::vector<std::string> admin_api_keys;
  int max_depth = 64;
  int max_wait_s = 30;
  std::int64_t max_body_bytes = 1 << 20;
  int max_connections = 64;
  int read_timeout_s = 30;
  int idle_timeout_s = 120;
  int header_timeout_s = 10;
  int reserved_connections = 4;
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  kevlaya::config::RunsCfg runs;
  std::vector<std::pair<std::string, double>> lora;  // not used by the fake supervisor
  std::shared_ptr<http::PipelineRunner> runner;
  bool broken_profile = false;  // adds profile "broken" whose start always fails (cuda_oom)
  std::chrono::milliseconds events_keepalive{15000};  // GET /events
  std::size_t events_buffer = 256;                    // GET /events
  std::int64_t max_answer_bytes = 8 << 20;  // limits.max_answer_bytes
  bool two_gpus = false;  // kev placed on gpu 0, laya on gpu 1 of two simulated devices, co-resident
  std::filesystem::path state_dir;  // set: the request history is kept there (activity.db)
  kevlaya::config::ActivityCfg activity;
  kevlaya::config::CaptureCfg capture;
};

// Supervisor (fake effects) + door on 127.0.0.1:0, io_context on a background thread.
class Door {
 public:
  explicit Door(DoorOptions o = {});
  ~Door();
  std::uint16_t port() const { return port_; }
  ScriptedUpstream& upstream() { return up_; }
  supervisor::Snapshot snapshot();
  void report_crash(const std::string& profile);  // the fake child of `profile` "dies"
  int starts() const;

 private:
  ScriptedUpstream up_;
  boost::asio::io_context ioc_;
  config::Config cfg_;
  FakeWorld world_;  // outlives sup_
  std::unique_ptr<supervisor::Supervisor> sup_;
  std::unique_ptr<http::Server> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

std::string chat_body(const std::string& model, const std::string& mode = "", bool stream = false);

// A `serve` config in `dir` for the API tests: kev (alias k) and laya rotating on `binary`, and emb
// (--embeddings, mean pooling: llama-server cannot generate with --embeddings) on the project's model.
void write_api_config(const std::filesystem::path& dir, const std::string& binary);

}  // namespace kevlaya::test
