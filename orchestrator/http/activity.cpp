// The door's side of the request history (docs/http.md "Activity"): the record's facts that come
// from the request itself, GET /activity (filters, pages, JSON or CSV; the query runs on the
// history's writer thread, never on the door's), and /status "activity".
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/post.hpp>

#include <charconv>

#include "http/detail.hpp"

namespace kevlaya::http {
namespace {

using nlohmann::json;

constexpr auto kQueryTimeout = std::chrono::seconds(10);

Result<activity::Query> parse_query(std::string_view query) {
  activity::Query q;
  const auto now = activity::unix_ms();
  q.model = query_param(query, "model");
  q.client = query_param(query, "client");
  if (const auto s = query_param(query, "status"); !s.empty() && !activity::parse_status(s, q))
    return make_error(Errc::bad_request, "status: '" + s + "' is not a status (200, 2xx, 4xx, 5xx or error)");
  for (auto [key, dst] : {std::pair{"since", &q.since_ms}, std::pair{"until", &q.until_ms}}) {
    const auto v = query_param(query, key);
    if (v.empty()) continue;
    auto t = activity::parse_time(v, now);
    if (!t) return make_error(Errc::bad_request, std::string(key) + ": " + t.error().message);
    *dst = *t;
  }
  for (auto [key, dst] : {std::pair{"before", &q.before_id}, std::pair{"limit", static_cast<std::int64_t*>(nullptr)}}) {
    const auto v = query_param(query, key);
    if (v.empty()) continue;
    std::int64_t n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 1)
      return make_error(Errc::bad_request, std::string(key) + ": '" + v + "' is not a positive integer");
    if (dst) *dst = n;
    else q.limit = static_cast<int>(std::min<std::int64_t>(n, activity::kMaxPage));
  }
  return q;
}

bool wants_csv(const Request& req, std::string_view query) {
  const auto f = query_param(query, "format");
  if (!f.empty()) return f == "csv";
  return header(req, bhttp::field::accept).find("text/csv") != std::string_view::npos;
}

Reply records_reply(const std::vector<RequestNote>& rows, const activity::Query& q, bool csv) {
  Reply r;
  const bool more = static_cast<int>(rows.size()) == q.limit;
  if (csv) {
    r.content_type = "text/csv; charset=utf-8";
    r.body = activity::csv_header();
    for (const auto& row : rows) r.body += activity::csv_row(row);
    if (more) r.headers.emplace_back("X-Kevlaya-Next-Before", std::to_string(rows.back().id));
    return r;
  }
  json list = json::array();
  for (const auto& row : rows) list.push_back(activity::to_json(row));
  return json_reply(200, {{"records", std::move(list)}, {"next_before", more ? json(rows.back().id) : json(nullptr)}});
}

// The status an attempt's error code stands for (500 for a code this build does not know).
int status_of_code(const std::string& code) {
  for (int i = 0; i <= static_cast<int>(Errc::internal); ++i)
    if (to_string(static_cast<Errc>(i)) == code) return http_status(static_cast<Errc>(i));
  return 500;
}

template <class T>
T number_of(const json& timings, const char* key) {
  const auto it = timings.find(key);
  return it != timings.end() && it->is_number() ? it->get<T>() : -1;
}

// One pipeline attempt (the executor's journal entry) as a request record.
RequestNote attempt_note(const json& a, const std::string& run_id, const std::string& endpoint) {
  RequestNote n;
  n.api = "pipeline";
  n.endpoint = endpoint;
  n.run = run_id;
  n.stage = a.value("stage", "");
  n.child = a.value("profile", "");
  n.model = n.child.empty() ? a.value("model", "") : n.child;
  n.queue_ms = a.value("queue_ms", std::int64_t{-1});
  n.swap_ms = a.value("switch_ms", std::int64_t{-1});
  const double call_ms = a.value("call_ms", 0.0);
  n.total_ms = std::max<std::int64_t>(0, n.queue_ms) + static_cast<std::int64_t>(call_ms);
  const auto err = a.find("error");
  n.status = err != a.end() && err->is_object() ? status_of_code(err->value("code", "internal")) : 200;
  if (n.status != 200) n.error = err->value("code", "internal");
  if (const auto t = a.find("timings"); t != a.end() && t->is_object()) {
    n.prompt_tokens = number_of<std::int64_t>(*t, "prompt_n");
    n.generated_tokens = number_of<std::int64_t>(*t, "predicted_n");
    n.cached_tokens = number_of<std::int64_t>(*t, "cache_n");
    n.prefill_tps = number_of<double>(*t, "prompt_per_second");
    n.decode_tps = number_of<double>(*t, "predicted_per_second");
  }
  return n;
}

// A query's answer, handed from the writer thread to the door's strand.
struct PendingQuery {
  explicit PendingQuery(Strand s) : timer(std::move(s)) {}
  std::optional<Result<std::vector<RequestNote>>> result;
  asio::steady_timer timer;  // cancelled when `result` is set
};

}  // namespace

activity::RecorderOptions history_options(const ServerOptions& opt) {
  activity::RecorderOptions o;
  o.path = opt.activity_db;
  o.bounds.max_records = opt.activity.max_records;
  o.bounds.max_age_ms = static_cast<std::int64_t>(opt.activity.max_age_days) * 86'400'000;
  o.bounds.max_bytes = static_cast<std::int64_t>(opt.activity.max_mib) << 20;
  return o;
}

RequestNote start_record(const Door& d, const Request& req, const Connection& c, std::string_view api) {
  RequestNote r;
  r.client = c.peer();
  r.user_agent = activity::clip_field(header(req, bhttp::field::user_agent));
  for (const auto& h : d.opt.activity.session_headers) {  // (no credential header: Door::use_options)
    if (const auto v = header(req, h); !v.empty()) {
      r.session = activity::clip_field(v);
      break;
    }
  }
  r.api = api;
  const auto target = req.target();
  r.endpoint = activity::clip_field(std::string_view(target.data(), target.size()).substr(0, target.find('?')));
  r.bytes_in = static_cast<std::int64_t>(req.body().size());
  return r;
}

std::string_view api_name(ApiShape s) {
  switch (s) {
    case ApiShape::openai: return "openai";
    case ApiShape::responses: return "responses";
    case ApiShape::anthropic: return "anthropic";
    case ApiShape::ollama: return "ollama";
  }
  return "openai";
}

std::string_view api_of(const ProxyCall& call) { return call.raw ? "llama-server" : api_name(call.shape); }

asio::awaitable<void> activity_route(Door& d, const Request& req, Connection& c, std::string_view query) {
  if (!d.history)
    co_return co_await c.reply(error_reply(make_error(Errc::unavailable, "the request history is off",
                                                      "set activity.enabled: true and a state_dir "
                                                      "(docs/configuration.md)")));
  auto q = parse_query(query);
  if (!q) co_return co_await c.reply(error_reply(q.error()));
  auto p = std::make_shared<PendingQuery>(d.strand);
  p->timer.expires_after(kQueryTimeout);
  d.history->query(*q, [p, ex = d.strand](Result<std::vector<RequestNote>> r) {
    auto shared = std::make_shared<Result<std::vector<RequestNote>>>(std::move(r));
    asio::post(ex, [p, shared] {
      p->result.emplace(std::move(*shared));
      p->timer.cancel();
    });
  });
  boost::system::error_code ec;
  co_await p->timer.async_wait(ec_token(ec));
  if (!p->result)
    co_return co_await c.reply(error_reply(make_error(Errc::timeout, "the request history did not answer in time")));
  if (!*p->result)  // the file failed under the query: the history is unavailable, not a door bug
    co_return co_await c.reply(error_reply(make_error(Errc::unavailable, p->result->error().message,
                                                      "GET /status shows the history's state; the door keeps serving")));
  co_await c.send(records_reply(p->result->value(), *q, wants_csv(req, query)));
}

void note_pipeline_calls(Door& d, const std::string& run_id, const std::string& pipeline, const json& record) {
  const auto attempts = record.find("attempts");
  if (attempts == record.end() || !attempts->is_array()) return;
  const std::string endpoint = "/v1/pipelines/" + pipeline + "/runs";
  for (const auto& a : *attempts)
    if (a.is_object() && (a.contains("profile") || a.contains("error"))) note_request(d, attempt_note(a, run_id, endpoint));
}

json activity_status_json(const Door& d) {
  if (!d.history) return {{"enabled", false}};
  const auto s = d.history->stats();
  return {{"enabled", true}, {"path", s.path}, {"written", s.written}, {"dropped", s.dropped},
          {"queued", s.queued}, {"error", s.error.empty() ? json(nullptr) : json(s.error)},
          {"repaired", s.repaired.empty() ? json(nullptr) : json(s.repaired)}};
}

}  // namespace kevlaya::http
