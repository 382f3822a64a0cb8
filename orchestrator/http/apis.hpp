// The model APIs the door passes through to a child (one table: path, method, API shape, where
// the model is named), and each API's own error and keep-alive forms. Pure: no Beast, no I/O.
// Errors are built once, OpenAI-shaped (errors.hpp); reshape_error() converts them at the edge.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "http/errors.hpp"

namespace kevlaya::http {

// Whose conventions a route follows: error body, SSE error event and swap keep-alive.
enum class ApiShape {
  openai,     // {"error":{...}}; SSE `data: {"error":...}`; keep-alive SSE comment
  responses,  // OpenAI Responses: {"error":{...}}; SSE `event: error` {"type":"error",...}
  anthropic,  // {"type":"error","error":{"type","message"}}; SSE `event: error`; `event: ping`
  ollama,     // {"error":"message"}; NDJSON, no keep-alive
};

// Where a route's request names its model.
enum class ModelFrom { body, query };

struct ApiRoute {
  std::string_view path;
  bool post = true;  // false: GET
  ApiShape shape = ApiShape::openai;
  ModelFrom from = ModelFrom::body;
};

// The pass-through route for `path` (exact match), or null.
const ApiRoute* find_api_route(std::string_view path);

// The shape of any path the door answers (errors of non-model routes are OpenAI-shaped).
ApiShape shape_of_path(std::string_view path);

// Converts an OpenAI-shaped error reply into `shape` (status and headers kept).
Reply reshape_error(Reply r, ApiShape shape);

// The SSE event that reports an error after a 200 stream head is out, in `shape`'s form.
std::string error_event(ApiShape shape, int status, const nlohmann::json& openai_error_body);

// The keep-alive written every keepalive_interval while a streaming client waits on a swap.
std::string keepalive_event(ApiShape shape, const std::string& model);

// A wait's progress ("loading kev: 40 %") as an OpenAI chat chunk whose delta carries only
// `reasoning_content` (chat UIs show it as thinking; the answer text stays clean).
std::string reasoning_event(const std::string& model, const std::string& text);

// The decoded value of `key` in a query string ("" when absent): %XX and '+' decoded.
std::string query_param(std::string_view query, std::string_view key);
// The query string of a request target: what follows its '?' ("" when none).
std::string_view query_of(std::string_view target);
// Percent-escapes decoded (and '+' as a space, as in a query); a bad escape is kept as written.
std::string url_decode(std::string_view s);

}  // namespace kevlaya::http
