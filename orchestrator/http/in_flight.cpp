// Model calls in progress (docs/http.md "In-flight requests"): GET /requests and
// POST /admin/requests/{id}/cancel. The list lives on the door's strand (Door::in_progress): each
// call registers itself for its lifetime, nothing is copied until someone asks.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <spdlog/spdlog.h>

#include <charconv>

#include "http/detail.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

// queued (waiting for a lease), switching (waiting while a child starts or stops), generating.
std::string_view phase_of(const Door& d, const InFlight& f) {
  if (f.leased) return "generating";
  return swap_in_progress(d) ? "switching" : "queued";
}

// (A plain function: GCC 12 rejects braced string-literal initialisers inside coroutines.)
Reply cancelled_reply(std::uint64_t id, const std::string& model, const std::string& phase) {
  return json_reply(200, {{"cancelled", id}, {"model", model}, {"phase", phase}});
}

}  // namespace

InFlight::InFlight(Door& d, RequestNote&& r) : id(d.next_request_id++), rec(std::move(r)), d_(d) {
  if (d_.captures) capture = d_.captures->start();  // null (not captured) when none can be written
  d_.in_progress.emplace(id, this);
}

InFlight::~InFlight() { d_.in_progress.erase(id); }

Error cancelled_error(std::uint64_t id) {
  return make_error(Errc::cancelled, "request " + std::to_string(id) + " was cancelled by an administrator",
                    "POST /admin/requests/" + std::to_string(id) + "/cancel stopped it; send it again if it is still wanted");
}

json in_flight_json(const Door& d) {
  json list = json::array();
  const auto now = Clock::now();
  for (const auto& [id, f] : d.in_progress) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - f->started).count();
    list.push_back({{"id", id}, {"elapsed_ms", elapsed}, {"model", f->rec.model}, {"api", f->rec.api},
                    {"endpoint", f->rec.endpoint}, {"phase", phase_of(d, *f)}, {"client", f->rec.client},
                    {"session", f->rec.session.empty() ? json(nullptr) : json(f->rec.session)},
                    {"user_agent", f->rec.user_agent.empty() ? json(nullptr) : json(f->rec.user_agent)},
                    {"cancelled", f->cancelled}});
  }
  return {{"requests", std::move(list)}};
}

asio::awaitable<void> cancel_request(Door& d, Connection& c, std::string_view id_text) {
  std::uint64_t id = 0;
  const auto r = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  const auto it = r.ec == std::errc() && r.ptr == id_text.data() + id_text.size() ? d.in_progress.find(id)
                                                                                   : d.in_progress.end();
  if (it == d.in_progress.end())
    co_return co_await c.reply(
        error_reply(make_error(Errc::not_found, "no request " + std::string(id_text) + " in progress", "GET /requests lists them")));
  InFlight& f = *it->second;
  const std::string phase(phase_of(d, f));
  f.cancelled = true;
  f.cancel->cancel();  // leaves the queue, or closes the child's connection: its generation stops
  spdlog::info("http: request {} ({}) cancelled by an admin while {}", id, f.rec.model, phase);
  co_await c.send(cancelled_reply(id, f.rec.model, phase));
}

}  // namespace kevlaya::http
