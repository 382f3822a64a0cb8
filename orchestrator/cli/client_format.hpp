// What the client commands print (pure, for tests): /status as a table, one line per /events
// event, and an SSE splitter that turns the stream's bytes into event payloads.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya::cli {

// GET /status -> a readable summary: models (state, pid, in flight, queued, idle unload, pin,
// load progress), the queue, devices when reported, the last switches.
std::string status_table(const nlohmann::json& status);

// GET /activity's page -> one row per request, oldest first (time, model, status, latencies,
// tokens, decode speed, client or session).
std::string activity_table(const nlohmann::json& page);

// One /events event -> one line ("12:00:01.234 unload kev (idle) in 85 ms").
std::string event_line(const nlohmann::json& event);

// Splits Server-Sent Events: feed() bytes as they come, get the `data:` payload of each complete
// event (comments and ids are skipped).
class SseSplitter {
 public:
  std::vector<std::string> feed(std::string_view bytes);

 private:
  std::string buf_;
  std::string data_;
};

}  // namespace kevlaya::cli
