// Captures (docs/http.md "Captures"): with capture.enabled, each model call's request (headers
// with credentials redacted, body) and response body are compressed into Door::captures as they
// pass (InFlight::capture); its activity record names the capture; GET /admin/captures/{id} (admin
// keys) streams it back as JSON. Nothing here holds the strand for a whole body.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "common/random.hpp"
#include "http/detail.hpp"

namespace kevlaya::http {

namespace {
constexpr std::size_t kRequestSlice = 256 * 1024;  // compressed per turn: well under a millisecond
}  // namespace

asio::awaitable<void> capture_request(Door& d, const Request& req, InFlight& me) {
  std::string_view body = req.body();
  while (me.capture && !body.empty()) {
    const std::size_t n = std::min(body.size(), kRequestSlice);
    me.capture->request(body.substr(0, n));
    body.remove_prefix(n);
    if (!body.empty()) co_await asio::post(d.strand, asio::use_awaitable);  // the others' turn
  }
}

void keep_capture(Door& d, const Request& req, InFlight& me, int status) {
  activity::CaptureInfo info;
  info.id = random_hex(8);
  info.at_ms = activity::unix_ms();
  info.model = me.rec.model;
  info.endpoint = me.rec.endpoint;
  info.method = std::string(req.method_string());
  for (const auto& f : req)
    info.request_headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  info.status = status;
  std::string id = info.id;
  if (d.captures->finish(std::move(me.capture), std::move(info))) me.rec.capture = std::move(id);
}

asio::awaitable<void> capture_route(Door& d, Connection& c, const std::string& id) {
  if (!d.captures)
    co_return co_await c.reply(error_reply(make_error(Errc::not_found, "captures are off",
                                                      "set capture.enabled: true (docs/configuration.md)")));
  auto reader = d.captures->open(id);
  if (!reader)
    co_return co_await c.reply(error_reply(make_error(Errc::not_found, "no capture '" + id + "'",
                                                      "the oldest captures go when capture.max_mib is full, "
                                                      "and all of them at a restart")));
  // A piece at a time (each at most a few hundred KiB), each written before the next is read, and
  // the others' turn after each: a client that reads fast completes every write at once, and the
  // strand would otherwise decompress the whole capture in one go.
  if (!co_await c.start_stream(200, "application/json", {})) co_return;
  for (std::string piece = reader->next(); !piece.empty(); piece = reader->next()) {
    if (!co_await c.chunk(piece)) co_return;
    co_await asio::post(d.strand, asio::use_awaitable);
  }
  if (reader->failed()) {  // a damaged or vanished file: cut short, never a wrong document
    spdlog::warn("http: capture {} could not be read back whole; its response was cut short", id);
    c.close();
    co_return;
  }
  co_await c.finish_stream();
}

}  // namespace kevlaya::http
