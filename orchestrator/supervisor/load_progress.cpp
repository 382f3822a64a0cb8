#include "supervisor/load_progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace kevlaya::supervisor {

namespace {

struct Marker {
  std::string_view text;
  std::string_view stage;
};

// In load order: the last marker seen wins.
constexpr Marker kMarkers[] = {
    {"load_model: loading model", "reading model"},
    {"llama_model_loader: loaded meta data", "reading metadata"},
    {"load_tensors: loading model tensors", "loading tensors"},
    {"llama_context: constructing", "creating context"},
    {"warming up the model", "warming up"},
    {"load_model: initializing", "initializing slots"},
    {"server is listening", "listening"},
    {"main: model loaded", "listening"},
};

// "offloaded 12/33 layers to GPU" -> "12/33".
std::string layers_of(std::string_view line) {
  const auto at = line.find("offloaded ");
  if (at == std::string_view::npos) return {};
  int done = 0, total = 0;
  const std::string rest(line.substr(at + 10, 32));
  if (std::sscanf(rest.c_str(), "%d/%d", &done, &total) != 2 || total <= 0) return {};
  return std::to_string(done) + "/" + std::to_string(total);
}

// A progress line: after an optional prefix, nothing but dots (at least one).
std::size_t dots_of(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  std::size_t n = 0;
  while (n < line.size() && line[line.size() - 1 - n] == '.') ++n;
  if (n == 0) return 0;
  const auto head = line.substr(0, line.size() - n);
  // "... [kev] ......" (our log prefix), bare dots, or dots continuing a line (LOG_CONT); not
  // an ellipsis ("this can take a while...").
  return head.empty() || head.back() == ' ' || head.back() == ']' || n > 3 ? n : 0;
}

}  // namespace

LoadProgress parse_load_progress(std::string_view log) {
  LoadProgress p;
  p.stage = "starting";
  std::size_t stage_rank = 0;  // index + 1 of the last marker seen
  std::string layers;
  std::size_t dots = 0;
  for (std::size_t start = 0; start < log.size();) {
    const auto nl = log.find('\n', start);
    const auto line = log.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? log.size() : nl + 1;
    for (std::size_t i = 0; i < std::size(kMarkers); ++i)
      if (line.find(kMarkers[i].text) != std::string_view::npos) stage_rank = std::max(stage_rank, i + 1);
    if (auto l = layers_of(line); !l.empty()) layers = l;
    if (stage_rank == 3) dots += dots_of(line);
  }
  if (stage_rank > 0) p.stage = std::string(kMarkers[stage_rank - 1].stage);
  if (stage_rank == 3) {
    if (!layers.empty()) p.stage += " (" + layers + " layers on GPU)";
    if (dots > 0) p.pct = static_cast<double>(std::min<std::size_t>(dots, 100));
  }
  return p;
}

void apply_load_estimate(LoadProgress& p, double expected_s, double elapsed_s) {
  // /status rounds eta_s to 0.1 s and readers round that up to whole seconds: from 0.05 s left on,
  // what is shown is at least "1 s"; below it, "0 s" would be shown, so it counts as overdue.
  const double left = expected_s - elapsed_s;
  if (left >= 0.05) {
    p.eta_s = left;
    return;
  }
  p.eta_s.reset();
  const long long estimate = std::llround(std::max(0.0, expected_s));
  const std::string note = "taking longer than the estimated " + std::to_string(estimate) + " s";
  p.stage = p.stage.empty() || p.stage == "starting" ? note : p.stage + "; " + note;
}

}  // namespace kevlaya::supervisor
