#include "cli/summary_table.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "common/bytes.hpp"
#include "pipeline/text.hpp"

namespace kevlaya::cli {

namespace {

std::string fixed1(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v;
  return s.str();
}

}  // namespace

std::string format_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  const auto width = [](const std::string& c) { return pipeline::utf8_length(c); };
  std::vector<std::size_t> w(right.size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) {
      const std::string pad(w[i] - width(r[i]), ' ');
      out += "  " + (right[i] ? pad + r[i] : r[i] + (i + 1 < r.size() ? pad : ""));
    }
    out += "\n";
  }
  return out;
}

std::string stage_table(const pipeline::RunSummary& s) {
  std::vector<std::vector<std::string>> rows = {{"stage", "model", "calls", "invalid", "ms/call", "tok/s"}};
  for (const auto& st : s.stages)
    rows.push_back({printable(st.stage), printable(st.model), std::to_string(st.calls), std::to_string(st.invalid),
                    fixed1(st.calls ? st.call_ms / st.calls : 0.0), fixed1(st.tokens_per_s())});
  return format_columns(rows, {false, false, true, true, true, true});
}

}  // namespace kevlaya::cli
