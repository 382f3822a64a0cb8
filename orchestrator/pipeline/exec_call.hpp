// One model call for the pipeline executor (internal): acquire a lease, POST the chat body,
// parse llama-server's answer; a child crash under the call is retried once after the restart.
#pragma once
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {
class Supervisor;
}

namespace kevlaya::pipeline {

struct CallResult {
  std::string content;        // choices[0].message.content
  std::string finish_reason;  // "stop" | "length" | ...
  nlohmann::json timings;     // llama-server's `timings` (null if absent)
  nlohmann::json usage;       // OpenAI `usage` (null if absent)
  std::string profile;        // the child that answered
  std::int64_t queue_ms = 0;  // acquire wait (sum over a crash retry)
  std::int64_t switch_ms = 0;
  double call_ms = 0;         // request -> response
  bool crash_retried = false; // the first try died with the child
  std::string crash_message;  // what the crash looked like, when retried
};

// Shared with the executor: where the call goes and how to abandon it.
struct CallEnv {
  boost::asio::any_io_executor ex;
  supervisor::Supervisor* sup = nullptr;
  std::chrono::milliseconds call_timeout{0};
  std::shared_ptr<upstream::CancelToken> cancel;  // replaced per call; stop() cancels it
  bool stopping = false;
  std::function<void(const std::string& profile)> on_lease;  // a lease was granted
};

// POSTs `body` to /v1/chat/completions on a child of `model`. Errors: the acquire error, the
// child's HTTP error (upstream_error, with its message), child_crashed (twice in a row),
// unavailable when abandoned by stop(), timeout.
boost::asio::awaitable<Result<CallResult>> call_model(CallEnv& env, std::string model, std::string body);

}  // namespace kevlaya::pipeline
