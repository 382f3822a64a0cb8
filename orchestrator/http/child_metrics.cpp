// The children's own `llamacpp:*` metrics on the door's /metrics, one `model` label per child.
// A scrape reads only children that are ready, at the endpoint their last lease used, with a short
// timeout: it takes no lease, so it never starts, wakes or keeps a model (idle unload is unmoved).
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <map>

#include "http/child_routes.hpp"
#include "http/detail.hpp"
#include "http/metrics.hpp"

namespace kevlaya::http {
namespace {

constexpr std::string_view kChildPrefix = "llamacpp:";  // llama-server's families
constexpr std::chrono::milliseconds kScrapeTimeout{1000};
constexpr std::size_t kMaxChildMetricsBytes = 1 << 20;

struct Family {
  std::string help, type;  // the lines as the child wrote them
  std::vector<std::string> samples;
};

std::string_view first_word(std::string_view s) { return s.substr(0, s.find(' ')); }

// The family a sample belongs to: its name, or the name less a histogram/summary suffix when that
// family was declared.
std::string family_of(const std::map<std::string, Family, std::less<>>& fams, std::string_view name) {
  if (fams.count(name)) return std::string(name);
  for (const std::string_view suffix : {"_bucket", "_sum", "_count"})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
        fams.count(name.substr(0, name.size() - suffix.size())))
      return std::string(name.substr(0, name.size() - suffix.size()));
  return std::string(name);
}

// `name{labels} value` -> `name{model="m",labels} value`.
std::string relabel(std::string_view line, std::string_view name, const std::string& model_label) {
  std::string out(name);
  out += "{model=\"" + model_label + "\"";
  std::string_view rest = line.substr(name.size());
  if (!rest.empty() && rest.front() == '{') {
    const auto close = rest.find('}');
    if (close == std::string_view::npos) return {};
    const auto inner = rest.substr(1, close - 1);
    if (!inner.empty()) out += "," + std::string(inner);
    rest.remove_prefix(close + 1);
  }
  return out + "}" + std::string(rest);
}

}  // namespace

std::string merge_child_metrics(const std::vector<std::pair<std::string, std::string>>& by_model) {
  std::map<std::string, Family, std::less<>> fams;
  std::vector<std::string> order;  // families in the order first seen
  const auto family = [&](const std::string& name) -> Family& {
    auto [it, fresh] = fams.try_emplace(name);
    if (fresh) order.push_back(name);
    return it->second;
  };
  for (const auto& [model, text] : by_model) {
    const std::string label = Metrics::escape_label(model);
    std::string_view rest = text;
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const bool help = line.rfind("# HELP ", 0) == 0, type = line.rfind("# TYPE ", 0) == 0;
      const auto name = first_word(help || type ? line.substr(7) : line);
      if (name.substr(0, kChildPrefix.size()) != kChildPrefix) continue;  // comments, blanks, others
      if (help || type) {
        auto& f = family(std::string(name));
        (help ? f.help : f.type) = std::string(line);
        continue;
      }
      const auto sample_name = line.substr(0, line.find_first_of("{ "));
      if (auto s = relabel(line, sample_name, label); !s.empty())
        family(family_of(fams, sample_name)).samples.push_back(std::move(s));
    }
  }
  std::string out;
  for (const auto& name : order) {
    const auto& f = fams.at(name);
    if (!f.help.empty()) out += f.help + "\n";
    if (!f.type.empty()) out += f.type + "\n";
    for (const auto& s : f.samples) out += s + "\n";
  }
  return out;
}

asio::awaitable<std::string> child_metrics_text(Door& d) {
  std::vector<std::pair<std::string, upstream::Endpoint>> ready;
  for (auto it = d.child_endpoints.begin(); it != d.child_endpoints.end();) {
    const auto phase = d.phases.find(it->first);
    if (phase != d.phases.end() && phase->second == supervisor::Phase::ready) {
      ready.emplace_back(it->first, it->second);
      ++it;
    } else {  // stopped or being replaced: that start's key is spent; the next lease brings the new one
      it = d.child_endpoints.erase(it);
    }
  }
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& [child, ep] : ready) {
    upstream::Request req;
    req.target = "/metrics";
    req.timeout = kScrapeTimeout;
    auto res = co_await upstream::fetch(d.strand, ep, std::move(req));
    if (res && res->status == 200 && res->body.size() <= kMaxChildMetricsBytes) {
      texts.emplace_back(child, std::move(res->body));
      continue;
    }
    if (!res) continue;  // busy or gone: asked again at the next scrape (a dead child changes phase)
    // No --metrics (501), a key of an earlier start (401): not asked again until its next lease.
    const auto it = d.child_endpoints.find(child);
    if (it != d.child_endpoints.end() && it->second.port == ep.port && it->second.api_key == ep.api_key)
      d.child_endpoints.erase(it);
  }
  co_return merge_child_metrics(texts);
}

}  // namespace kevlaya::http
