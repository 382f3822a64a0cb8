// The request record's JSON and CSV forms, and the filters' small parsers.
#include "activity/record.hpp"

#include <charconv>
#include <chrono>

namespace kevlaya::activity {

using nlohmann::json;

namespace {

json or_null(std::int64_t v) { return v >= 0 ? json(v) : json(nullptr); }
json or_null(double v) { return v >= 0 ? json(v) : json(nullptr); }
json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// A cell a spreadsheet would evaluate: OWASP's list of formula triggers.
bool formula_like(std::string_view s) { return !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos; }

void csv_field(std::string& out, std::string_view s) {
  const bool formula = formula_like(s);
  if (!formula && s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  if (formula) out += '\'';  // shown as text, never run
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void csv_num(std::string& out, std::int64_t v) {
  if (v >= 0) out += std::to_string(v);
}

void csv_num(std::string& out, double v) {
  if (v < 0) return;
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  out.append(buf, r.ptr);
}

}  // namespace

json to_json(const Record& r) {
  return {{"id", r.id},
          {"at_ms", r.at_ms},
          {"client", or_null(r.client)},
          {"user_agent", or_null(r.user_agent)},
          {"session", or_null(r.session)},
          {"api", r.api},
          {"model", r.model},
          {"child", or_null(r.child)},
          {"endpoint", r.endpoint},
          {"status", r.status},
          {"error", or_null(r.error)},
          {"bytes_in", r.bytes_in},
          {"bytes_out", r.bytes_out},
          {"queue_ms", or_null(r.queue_ms)},
          {"swap_ms", or_null(r.swap_ms)},
          {"ttft_ms", or_null(r.ttft_ms)},
          {"total_ms", r.total_ms},
          {"prompt_tokens", or_null(r.prompt_tokens)},
          {"cached_tokens", or_null(r.cached_tokens)},
          {"generated_tokens", or_null(r.generated_tokens)},
          {"prefill_tps", or_null(r.prefill_tps)},
          {"decode_tps", or_null(r.decode_tps)},
          {"run", or_null(r.run)},
          {"stage", or_null(r.stage)},
          {"capture", or_null(r.capture)}};
}

std::string_view csv_header() {
  return "id,at_ms,client,user_agent,session,api,model,child,endpoint,status,error,bytes_in,bytes_out,"
         "queue_ms,swap_ms,ttft_ms,total_ms,prompt_tokens,cached_tokens,generated_tokens,prefill_tps,"
         "decode_tps,run,stage,capture\n";
}

std::string csv_row(const Record& r) {
  std::string o;
  const auto sep = [&o] { o += ','; };
  csv_num(o, r.id), sep(), csv_num(o, r.at_ms), sep();
  for (const auto* s : {&r.client, &r.user_agent, &r.session, &r.api, &r.model, &r.child, &r.endpoint})
    csv_field(o, *s), sep();
  o += std::to_string(r.status), sep(), csv_field(o, r.error), sep();
  for (const auto v : {r.bytes_in, r.bytes_out, r.queue_ms, r.swap_ms, r.ttft_ms, r.total_ms, r.prompt_tokens,
                       r.cached_tokens, r.generated_tokens})
    csv_num(o, v), sep();
  csv_num(o, r.prefill_tps), sep(), csv_num(o, r.decode_tps), sep();
  csv_field(o, r.run), sep(), csv_field(o, r.stage), sep(), csv_field(o, r.capture);
  o += '\n';
  return o;
}

std::string clip_field(std::string_view s) {
  if (s.size() <= kMaxFieldBytes) return std::string(s);
  constexpr std::string_view kMark = "\u2026";  // "…": the value was longer
  std::size_t end = kMaxFieldBytes - kMark.size();
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // not inside a character
  return std::string(s.substr(0, end)) + std::string(kMark);
}

Result<std::int64_t> parse_time(std::string_view text, std::int64_t now_ms) {
  const auto bad = [&](const std::string& why) { return make_error(Errc::bad_request, "'" + std::string(text) + "' " + why); };
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec == std::errc::result_out_of_range) return bad("is out of range");
  if (r.ec != std::errc() || v < 0) return bad("is not a time (a unix time in ms, or 30s, 15m, 1h, 2d ago)");
  if (r.ptr == end) return v;
  const std::string_view unit(r.ptr, static_cast<std::size_t>(end - r.ptr));
  const std::int64_t scale = unit == "s" ? 1000 : unit == "m" ? 60'000 : unit == "h" ? 3'600'000 : unit == "d" ? 86'400'000 : 0;
  if (scale == 0) return bad("has an unknown unit (use s, m, h or d)");
  // Checked before multiplying: a wrapped product would select nothing (or everything) silently.
  if (v > now_ms / scale) return bad("is out of range (before 1970)");
  return now_ms - v * scale;
}

bool parse_status(std::string_view text, Query& q) {
  if (text == "2xx" || text == "4xx" || text == "5xx") {
    q.status_class = text[0] - '0';
    return true;
  }
  if (text == "error") {
    q.status_class = 1;
    return true;
  }
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 100 || v > 599) return false;
  q.status = v;
  return true;
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace kevlaya::activity
