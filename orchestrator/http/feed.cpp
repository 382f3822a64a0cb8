// The status page's extras (docs/ui.md): the last model calls and pipeline runs (bounded rings in
// /status, and `request` / `run` events on /events), each model's load at the door (coalesced
// `queue` events), the ledger's plan for /status "gpu", and GET /logs/{model} (a bounded tail of
// a child's log file, read from a byte offset so the page can follow it).
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <charconv>
#include <fstream>

#include "http/detail.hpp"
#include "supervisor/child.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

constexpr std::size_t kRecent = 50;                       // records kept per ring
constexpr auto kQueueTick = std::chrono::milliseconds(200);  // at most 5 `queue` events a second
constexpr std::int64_t kLogMaxBytes = 64 * 1024;          // one /logs answer reads at most this
constexpr int kLogMaxLines = 500;

template <class T, class U>
void push_bounded(std::deque<T>& ring, U&& item) {
  ring.push_back(std::forward<U>(item));
  while (ring.size() > kRecent) ring.pop_front();
}

json queue_json(const Door& d) {
  json by_model = json::object();
  for (const auto& [m, l] : d.feed.load) by_model[m] = {{"waiting", l.waiting}, {"in_flight", l.in_flight}};
  return {{"type", "queue"}, {"waiting", d.waiting}, {"in_flight", d.in_flight}, {"by_model", by_model},
          {"at_ms", activity::unix_ms()}};
}

// Arms the tick that publishes the load as it is then (one event for any burst of changes).
void queue_changed(Door& d) {
  if (d.feed.tick_armed || d.event_clients.empty()) return;
  if (!d.feed.tick) d.feed.tick = std::make_shared<asio::steady_timer>(d.strand);
  d.feed.tick_armed = true;
  d.feed.tick->expires_after(kQueueTick);
  d.feed.tick->async_wait([dp = &d, alive = d.feed.alive](boost::system::error_code ec) {
    if (!*alive) return;  // the door is gone (the timer went with it)
    dp->feed.tick_armed = false;
    if (!ec) publish(*dp, queue_json(*dp));
  });
}

std::int64_t int_param(std::string_view query, std::string_view key, std::int64_t fallback) {
  for (std::size_t at = 0; at < query.size();) {
    const auto amp = query.find('&', at);
    const auto item = query.substr(at, amp == std::string_view::npos ? std::string_view::npos : amp - at);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      std::int64_t v = 0;
      const auto num = item.substr(key.size() + 1);
      if (std::from_chars(num.data(), num.data() + num.size(), v).ec == std::errc{}) return v;
      return fallback;
    }
    if (amp == std::string_view::npos) break;
    at = amp + 1;
  }
  return fallback;
}

// The child's name for `model` (a profile or alias, or a child seen on /events), or "": a member
// of a shared child is served, and logged, by the plan's shared child ("base+kev+laya").
std::string log_name(const Door& d, const std::string& model) {
  if (const auto* p = d.cfg().find_profile(model)) return d.snap->plan ? d.snap->plan->child_of(p->name) : p->name;
  return d.phases.count(model) ? model : std::string{};
}

// Lines of `path` after byte `after` (or its last `lines` when after < 0 or past the end: a new
// file after rotation), reading at most kLogMaxBytes. Blocking file I/O, bounded and small.
json read_log(const std::filesystem::path& path, std::int64_t after, std::int64_t lines) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {{"offset", 0}, {"lines", json::array()}, {"file", false}};
  const std::int64_t size = in.tellg();
  const bool tail = after < 0 || after > size;
  std::int64_t from = tail ? std::max<std::int64_t>(0, size - kLogMaxBytes) : after;
  const bool skipped = size - from > kLogMaxBytes;
  if (skipped) from = size - kLogMaxBytes;
  std::string buf(static_cast<std::size_t>(size - from), '\0');
  in.seekg(from);
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  // Only whole lines: a partial last line is read again next time.
  const auto last_nl = buf.rfind('\n');
  const std::size_t whole = last_nl == std::string::npos ? 0 : last_nl + 1;
  std::vector<std::string> out;
  for (std::size_t at = (tail || skipped) && from > 0 ? buf.find('\n') + 1 : 0; at < whole;) {
    const auto nl = buf.find('\n', at);
    out.emplace_back(buf.substr(at, nl - at));
    at = nl + 1;
  }
  const auto keep = static_cast<std::size_t>(std::clamp<std::int64_t>(lines, 1, kLogMaxLines));
  if (out.size() > keep) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(keep));
  return {{"offset", from + static_cast<std::int64_t>(whole)}, {"lines", out}, {"file", true},
          {"skipped", skipped}};
}

json request_json(const RequestNote& n) {
  const auto or_null = [](auto v) { return v >= 0 ? json(v) : json(nullptr); };
  return {{"model", n.model},
          {"endpoint", n.endpoint},
          {"status", n.status},
          {"total_ms", n.total_ms},
          {"at_ms", n.at_ms},
          {"queue_ms", or_null(n.queue_ms)},
          {"swap_ms", or_null(n.swap_ms)},
          {"tokens_per_s", n.decode_tps > 0 ? json(n.decode_tps) : json(nullptr)}};
}

}  // namespace

// On every model call: the record is kept as a struct, and made JSON only for /status and for
// /events subscribers (none, usually).
void note_request(Door& d, RequestNote&& n) {
  n.at_ms = activity::unix_ms();
  if (d.history) d.history->submit(n);  // a copy handed to the writer thread: no disk here
  push_bounded(d.feed.recent_requests, std::move(n));
  if (d.event_clients.empty()) return;
  json j = request_json(d.feed.recent_requests.back());
  j["type"] = "request";
  publish(d, j);
}

void note_run(Door& d, json run) {
  run["at_ms"] = activity::unix_ms();
  push_bounded(d.feed.recent_runs, run);
  run["type"] = "run";
  publish(d, run);
}

ModelLoad::ModelLoad(Door& d, std::string model) : d_(d), model_(std::move(model)) {
  ++d_.feed.load[model_].waiting;
  queue_changed(d_);
}

void ModelLoad::leased() {
  auto& l = d_.feed.load[model_];
  --l.waiting;
  ++l.in_flight;
  state_ = 1;
  queue_changed(d_);
}

ModelLoad::~ModelLoad() {
  auto& l = d_.feed.load[model_];
  (state_ == 0 ? l.waiting : l.in_flight)--;
  queue_changed(d_);
}

json feed_status_json(const Door& d) {
  json j = {{"recent_requests", json::array()}, {"recent_runs", json::array()}};
  for (const auto& r : d.feed.recent_requests) j["recent_requests"].push_back(request_json(r));
  for (const auto& r : d.feed.recent_runs) j["recent_runs"].push_back(r);
  j["gpu"] = d.opt.gpu_plan;
  return j;
}

json plan_json(const ledger::Plan& plan) {
  const auto mib = [](std::uint64_t b) { return static_cast<double>(b) / static_cast<double>(ledger::kMiB); };
  json profiles = json::object();
  for (const auto& p : plan.profiles) {
    const auto& b = p.effective;
    profiles[p.name] = {{"weights_mib", mib(b.weights_gpu)}, {"kv_mib", mib(b.kv_gpu)},
                        {"compute_mib", mib(b.compute_gpu)}, {"overhead_mib", mib(b.overhead_gpu)},
                        {"adapters_mib", mib(b.adapters_gpu)}, {"total_mib", mib(b.total_gpu())},
                        {"measured", p.measured.has_value()}, {"fits_alone", p.fits_alone}};
  }
  json j = {{"mode", ledger::to_string(plan.mode)}, {"allowed_sets", plan.allowed_sets}, {"plan", profiles}};
  json children = json::object();  // each member of a shared child: that child's name
  for (const auto& c : plan.shared_children())
    for (const auto& m : c.members) children[m] = c.name;
  j["children"] = std::move(children);
  // An unknown budget is planned as "unlimited" (max uint64): shown as null.
  j["budget_mib"] = plan.budget == 0 || plan.budget == std::numeric_limits<std::uint64_t>::max()
                        ? json(nullptr)
                        : json(mib(plan.budget));
  return j;
}

asio::awaitable<void> logs(Door& d, Connection& c, std::string model, std::string_view query) {
  const auto name = log_name(d, model);
  if (name.empty())
    co_return co_await c.reply(error_reply(make_error(Errc::not_found, "no model or child named '" + model + "'")));
  if (d.cfg().orch.log_dir.empty())
    co_return co_await c.reply(
        error_reply(make_error(Errc::not_found, "children's logs are not kept (log_dir is unset)")));
  json j = read_log(supervisor::child_log_path(d.cfg().orch.log_dir, name), int_param(query, "after", -1),
                    int_param(query, "lines", 200));
  j["model"] = name;
  co_await c.send(json_reply(200, j));
}

}  // namespace kevlaya::http
