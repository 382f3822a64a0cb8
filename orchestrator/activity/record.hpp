// The one request record (docs/http.md "Activity"): what the door learnt about one model call,
// built where the request path already has each fact (http/proxy.cpp), kept in the status page's
// ring and persisted by the Recorder (recorder.hpp). Plain values; JSON and CSV only when asked.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kevlaya::activity {

// -1 in an integer or speed field = unknown (null in JSON, empty in CSV, NULL in SQLite).
struct Record {
  std::int64_t id = 0;     // the history's row id (0 until stored; GET /activity pages by it)
  std::int64_t at_ms = 0;  // unix ms when the answer ended (started = at_ms - total_ms)
  std::string client;      // the peer's address
  std::string user_agent;
  std::string session;     // the first of activity.session_headers the request carried
  std::string api;         // openai | responses | anthropic | ollama | llama-server
  std::string model;       // the profile ("" when the request named none we know)
  std::string child;       // the child that served it (a shared-base group's child, or the profile)
  std::string endpoint;    // the door path it came in on
  int status = 0;
  std::string error;       // Errc name of a failure ("" = none); "client_left" for a 499
  std::int64_t bytes_in = 0, bytes_out = 0;  // request body, response body (as relayed)
  std::int64_t queue_ms = -1, swap_ms = -1;  // -1: it never held a lease
  std::int64_t ttft_ms = -1;                 // arrival to the child's first body byte
  std::int64_t total_ms = 0;
  std::int64_t prompt_tokens = -1, cached_tokens = -1, generated_tokens = -1;  // llama-server timings
  double prefill_tps = -1, decode_tps = -1;                                    // prompt / predicted per second
  std::string run, stage;  // pipeline run id and stage, for a pipeline's call
  std::string capture;     // its capture's id (GET /admin/captures/{id}) when captures are on
};

nlohmann::json to_json(const Record& r);
std::string_view csv_header();       // one line, ending in \n
// One line, ending in \n: RFC 4180 quoting, and a cell that a spreadsheet would run as a formula
// (starting with =, +, -, @, tab or CR) prefixed with ' and quoted (OWASP's CSV injection advice).
std::string csv_row(const Record& r);

// What one record may keep of a text the client chose (user agent, session, path, ...).
constexpr std::size_t kMaxFieldBytes = 256;
// `s` cut to kMaxFieldBytes on a UTF-8 boundary, ending in "…" when it was cut.
std::string clip_field(std::string_view s);

// GET /activity and `kevlaya-orch activity`: which records, newest first.
struct Query {
  std::string model, client;  // exact model; client = address or session
  std::optional<int> status;  // exact status, or status_class
  int status_class = 0;       // 2 = 2xx, 4 = 4xx, 5 = 5xx, 1 = any error (>= 400); 0 = any
  std::int64_t since_ms = 0, until_ms = 0;  // unix ms, 0 = open
  std::int64_t before_id = 0;               // page: ids below this (0 = from the newest)
  int limit = 100;
};
constexpr int kMaxPage = 1000;

// `1h`, `30m`, `2d`, `45s` (ago, from `now_ms`) or a unix time in ms; bad_request for anything
// else, including a number too large to compute or a time before 1970.
Result<std::int64_t> parse_time(std::string_view text, std::int64_t now_ms);
// A status filter: "200" (exact), "2xx", "4xx", "5xx" or "error" (>= 400); false when none of those.
bool parse_status(std::string_view text, Query& q);

std::int64_t unix_ms();  // the wall clock, in ms

}  // namespace kevlaya::activity
