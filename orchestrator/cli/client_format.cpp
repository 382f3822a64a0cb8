#include "cli/client_format.hpp"

#include <cmath>
#include <ctime>

#include "cli/summary_table.hpp"

namespace kevlaya::cli {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key, const std::string& dflt = "-") {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return dflt;
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v.get<double>());
    return b;
  }
  return v.dump();
}

std::string join_names(const json& arr) {
  if (!arr.is_array() || arr.empty()) return "none";
  std::string s;
  for (const auto& x : arr) s += (s.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
  return s;
}

std::string idle_cell(const json& p) {
  if (!p.contains("idle_unload_in_s") || p["idle_unload_in_s"].is_null()) return "-";
  const double s = p["idle_unload_in_s"].get<double>();
  return std::to_string(static_cast<long long>(std::ceil(s))) + "s";
}

std::string progress_cell(const json& p) {
  if (!p.contains("load_progress") || !p["load_progress"].is_object()) return "";
  const auto& lp = p["load_progress"];
  std::string s = str(lp, "stage", "");
  if (lp.contains("pct") && lp["pct"].is_number()) s += " " + str(lp, "pct") + "%";
  if (lp.contains("eta_s") && lp["eta_s"].is_number())
    s += ", about " + std::to_string(static_cast<long long>(std::ceil(lp["eta_s"].get<double>()))) + "s left";
  return s;
}

std::string clock_of(const json& e) {
  if (!e.contains("at_ms") || !e["at_ms"].is_number_integer()) return "--:--:--.---";
  const auto ms = e["at_ms"].get<std::int64_t>();
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char b[32];
  std::snprintf(b, sizeof b, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return b;
}

}  // namespace

std::string status_table(const json& st) {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "STATE", "PID", "IN FLIGHT", "QUEUED", "IDLE UNLOAD", "PINNED", "LOADING"}};
  for (const auto& p : st.value("profiles", json::array())) {
    rows.push_back({str(p, "name"), str(p, "state"), p.value("pid", 0) > 0 ? str(p, "pid") : "-",
                    str(p, "in_flight"), str(p, "queued"), idle_cell(p), str(p, "pinned", "no"), progress_cell(p)});
  }
  std::string out = "models:\n" + format_columns(rows, {false, false, true, true, true, true, false, false});
  const auto q = st.value("queue", json::object());
  out += "queue: " + str(q, "supervisor_queued", "0") + " waiting for a model (max " + str(q, "max_depth") +
         "); door requests in progress: " + str(st, "in_flight_requests", "0") + "; resident: " + join_names(st.value("resident", json())) + "\n";
  if (st.contains("devices") && st["devices"].is_array() && !st["devices"].empty()) {
    std::vector<std::vector<std::string>> dev = {{"GPU", "NAME", "VRAM MiB", "USED MiB"}};
    for (const auto& d : st["devices"]) dev.push_back({str(d, "index"), str(d, "name"), str(d, "vram_mib"), str(d, "used_mib")});
    out += "devices:\n" + format_columns(dev, {true, false, true, true});
  }
  const auto sw = st.value("recent_switches", json::array());
  if (!sw.empty()) {
    std::vector<std::vector<std::string>> rs = {{"FROM", "TO", "OK", "TOTAL MS", "WHY"}};
    const std::size_t from = sw.size() > 5 ? sw.size() - 5 : 0;
    for (std::size_t i = from; i < sw.size(); ++i) {
      const auto& s = sw[i];
      const auto total = s.contains("phases_ms") ? str(s["phases_ms"], "total") : "-";
      const std::string from_name = str(s, "from", "");
      rs.push_back({from_name.empty() ? "(none)" : from_name, str(s, "to"), str(s, "ok"), total, str(s, "reason", "-")});
    }
    out += "recent switches:\n" + format_columns(rs, {false, false, false, true, false});
  }
  if (st.value("shutting_down", false)) out += "the door is shutting down\n";
  return out;
}

std::string activity_table(const json& page) {
  std::vector<std::vector<std::string>> rows = {{"TIME", "MODEL", "API", "STATUS", "TOTAL MS", "TTFT MS", "QUEUE MS",
                                                 "PROMPT", "GEN", "DECODE T/S", "CLIENT"}};
  const auto recs = page.value("records", json::array());
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {  // oldest first, like a log
    const auto& r = *it;
    const std::string who = str(r, "session", "").empty() ? str(r, "client") : str(r, "session");
    std::string status = str(r, "status");
    if (r.contains("error") && r["error"].is_string()) status += " " + r["error"].get<std::string>();
    rows.push_back({clock_of(r), str(r, "model", "").empty() ? "-" : str(r, "model"), str(r, "api"), status,
                    str(r, "total_ms"), str(r, "ttft_ms"), str(r, "queue_ms"), str(r, "prompt_tokens"),
                    str(r, "generated_tokens"), str(r, "decode_tps"), who});
  }
  if (recs.empty()) return "no requests recorded for this filter\n";
  return format_columns(rows, {false, false, false, false, true, true, true, true, true, true, false});
}

std::string event_line(const json& e) {
  const std::string type = str(e, "type", "?");
  std::string s = clock_of(e) + " " + type + " ";
  if (type == "phase") {
    s += str(e, "child") + " " + str(e, "from") + " -> " + str(e, "to");
    if (e.contains("failure") && e["failure"].is_object())
      s += " [" + str(e["failure"], "kind") + ": " + str(e["failure"], "message") + "]";
  } else if (type == "switch") {
    const std::string from = str(e, "from", "");
    s += (from.empty() ? "(none)" : from) + " -> " + str(e, "to") + (e.value("ok", false) ? " ok " : " FAILED ") +
         (e.contains("phases_ms") ? str(e["phases_ms"], "total") : "?") + " ms";
    if (e.contains("reason")) s += " (" + from + ": " + str(e, "reason") + ")";
    if (!e.value("ok", true)) s += " [" + str(e, "failure") + ": " + str(e, "error") + "]";
  } else if (type == "unload") {
    s += str(e, "model") + " (" + str(e, "reason") + ") in " + str(e, "stop_ms") + " ms";
  } else if (type == "reload") {
    s += "changed: " + join_names(e.value("changed", json())) + "; added: " + join_names(e.value("added", json())) +
         "; removed: " + join_names(e.value("removed", json()));
  } else {
    s += e.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return s;
}

std::vector<std::string> SseSplitter::feed(std::string_view bytes) {
  std::vector<std::string> out;
  buf_.append(bytes);
  std::size_t start = 0;
  for (std::size_t nl; (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(buf_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {  // end of an event
      if (!data_.empty()) out.push_back(std::move(data_));
      data_.clear();
    } else if (line.substr(0, 5) == "data:") {
      auto v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (!data_.empty()) data_ += '\n';
      data_.append(v);
    }
  }
  buf_.erase(0, start);
  return out;
}

}  // namespace kevlaya::cli
