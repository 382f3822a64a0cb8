// A small metrics registry with a hand-written Prometheus text exposition (format 0.0.4):
// HELP/TYPE per family, counters named *_total, cumulative histogram buckets with +Inf, _sum and
// _count, escaped label values. Not synchronised: the door touches it only on its strand.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kevlaya::http {

using Labels = std::vector<std::pair<std::string, std::string>>;
// Labels as an update names them: views, so updating a series that exists makes no string (the
// door updates several per request).
using LabelViews = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class Metrics {
 public:
  enum class Type { counter, gauge, histogram };
  Metrics() = default;
  Metrics(const Metrics&) = delete;  // a family's `last` points into its own tree
  Metrics& operator=(const Metrics&) = delete;

  // Declares a family (once, before use). Histograms need ascending finite bucket bounds.
  void describe(const std::string& name, Type type, std::string help,
                std::vector<double> buckets = {});
  // (Names are views: the door updates a few families per request, without a string per call.)
  void inc(std::string_view name, LabelViews labels, double by = 1.0);  // counter
  void set(std::string_view name, LabelViews labels, double value);     // gauge (or counter
                                                                        // mirrored from a source)
  void set(std::string_view name, const Labels& labels, double value);  // (labels built at run time)
  void observe(std::string_view name, LabelViews labels, double value);  // histogram
  void clear(std::string_view name);  // drops every series of a family (e.g. state gauges)

  std::string render() const;  // the whole exposition, families in name order

  // \ and newline escaped, and " too in a label value (not in HELP text: the format says so).
  static std::string escape_label(std::string_view v, bool quote = true);
  static std::string format_value(double v);            // integers without exponent, +Inf, NaN

 private:
  struct Series {
    double value = 0;
    std::vector<std::uint64_t> bucket_counts;  // per bucket (not cumulative), last = +Inf
    double sum = 0;
    std::uint64_t count = 0;
  };
  // Orders Labels as std::pair would, and finds them by views.
  struct LabelsLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        const std::string_view xk = x.first, yk = y.first;
        return xk != yk ? xk < yk : std::string_view(x.second) < std::string_view(y.second);
      });
    }
  };
  struct Family {
    Type type = Type::counter;
    std::string help;
    std::vector<double> buckets;
    std::map<Labels, Series, LabelsLess> series;
    // The series updated last: the door updates the same few per request, and the tree's
    // comparisons cost ~700 instructions a lookup. Map nodes stay put; cleared with `series`.
    std::pair<const Labels, Series>* last = nullptr;
  };
  Family& family(std::string_view name);
  template <class L>
  static Series& series(Family& f, const L& labels);  // made on first use
  std::map<std::string, Family, std::less<>> families_;
};

}  // namespace kevlaya::http
