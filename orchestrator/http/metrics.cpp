#include "http/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kevlaya::http {
namespace {

std::string label_text(const Labels& labels, const std::string& extra_key = {},
                       const std::string& extra_value = {}) {
  if (labels.empty() && extra_key.empty()) return {};
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!first) out += ',';
    first = false;
    out += k + "=\"" + Metrics::escape_label(v) + "\"";
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (!extra_key.empty()) add(extra_key, extra_value);
  return out + "}";
}

const char* type_name(Metrics::Type t) {
  switch (t) {
    case Metrics::Type::counter: return "counter";
    case Metrics::Type::gauge: return "gauge";
    case Metrics::Type::histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

void Metrics::describe(const std::string& name, Type type, std::string help,
                       std::vector<double> buckets) {
  // A wrong declaration is a bug in the door, not an input error.
  if (type == Type::counter && (name.size() < 6 || name.substr(name.size() - 6) != "_total"))
    throw std::logic_error("counter without _total suffix: " + name);
  if (type == Type::histogram && !std::is_sorted(buckets.begin(), buckets.end()))
    throw std::logic_error("histogram buckets not ascending: " + name);
  Family& f = families_[name];
  f.type = type;
  f.help = std::move(help);
  f.buckets = std::move(buckets);
}

Metrics::Family& Metrics::family(std::string_view name) {
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metric not described: " + std::string(name));
  return it->second;
}

template <class L>
Metrics::Series& Metrics::series(Family& f, const L& labels) {
  const auto same = [](const auto& x, const auto& y) {
    return std::string_view(x.first) == std::string_view(y.first) && std::string_view(x.second) == std::string_view(y.second);
  };
  if (f.last && std::equal(labels.begin(), labels.end(), f.last->first.begin(), f.last->first.end(), same))
    return f.last->second;
  auto it = f.series.find(labels);
  if (it == f.series.end()) it = f.series.emplace(Labels(labels.begin(), labels.end()), Series{}).first;
  f.last = &*it;
  return it->second;
}

void Metrics::inc(std::string_view name, LabelViews labels, double by) { series(family(name), labels).value += by; }

void Metrics::set(std::string_view name, LabelViews labels, double value) { series(family(name), labels).value = value; }

void Metrics::set(std::string_view name, const Labels& labels, double value) {
  series(family(name), labels).value = value;
}

void Metrics::observe(std::string_view name, LabelViews labels, double value) {
  Family& f = family(name);
  Series& s = series(f, labels);
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f.buckets.size() + 1, 0);
  auto idx = std::lower_bound(f.buckets.begin(), f.buckets.end(), value) - f.buckets.begin();
  ++s.bucket_counts[static_cast<std::size_t>(idx)];
  s.sum += value;
  ++s.count;
}

void Metrics::clear(std::string_view name) {
  Family& f = family(name);
  f.series.clear();
  f.last = nullptr;
}

std::string Metrics::escape_label(std::string_view v, bool quote) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"' && quote) out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string Metrics::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

std::string Metrics::render() const {
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + escape_label(f.help, false) + "\n";
    out += "# TYPE " + name + " " + type_name(f.type) + "\n";
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::histogram) {
        out += name + label_text(labels) + " " + format_value(s.value) + "\n";
        continue;
      }
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i <= f.buckets.size(); ++i) {
        cumulative += s.bucket_counts.empty() ? 0 : s.bucket_counts[i];
        const std::string le = i < f.buckets.size() ? format_value(f.buckets[i]) : "+Inf";
        out += name + "_bucket" + label_text(labels, "le", le) + " " +
               format_value(static_cast<double>(cumulative)) + "\n";
      }
      out += name + "_sum" + label_text(labels) + " " + format_value(s.sum) + "\n";
      out += name + "_count" + label_text(labels) + " " +
             format_value(static_cast<double>(s.count)) + "\n";
    }
  }
  return out;
}

}  // namespace kevlaya::http
