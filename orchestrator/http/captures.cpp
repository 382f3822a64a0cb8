// Captures (docs/http.md "Captures"): with capture.enabled, each model call's request (headers
// with credentials redacted, body) and response body go into Door::captures, a compressed RAM
// ring; its activity record names the capture; GET /admin/captures/{id} (admin keys) reads it.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include "common/random.hpp"
#include "http/detail.hpp"

namespace kevlaya::http {

void keep_capture(Door& d, const Request& req, InFlight& me, int status) {
  activity::Capture cap;
  cap.id = random_hex(8);
  cap.at_ms = activity::unix_ms();
  cap.model = me.rec.model;
  cap.endpoint = me.rec.endpoint;
  cap.method = std::string(req.method_string());
  for (const auto& f : req)
    cap.request_headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  cap.request_body = req.body();
  cap.status = status;
  if (me.response_capture) cap.response_body = std::move(*me.response_capture);
  std::string id = cap.id;
  if (d.captures->add(std::move(cap))) me.rec.capture = std::move(id);
}

asio::awaitable<void> capture_route(Door& d, Connection& c, const std::string& id) {
  if (!d.captures) {
    co_await c.send(error_reply(make_error(Errc::not_found, "captures are off",
                                           "set capture.enabled: true (docs/configuration.md)")));
    co_return;
  }
  auto doc = d.captures->get(id);
  if (!doc) {
    co_await c.send(error_reply(make_error(Errc::not_found, "no capture '" + id + "'",
                                           "captures live in RAM: the oldest go when capture.max_mib is full, "
                                           "and all of them at a restart")));
    co_return;
  }
  co_await c.send(json_reply(200, *doc));
}

}  // namespace kevlaya::http
