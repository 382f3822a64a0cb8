// Plain-text tables for run summaries: columns sized to their widest cell, two spaces apart, so a
// large number never runs into its neighbour (pure, for tests).
#pragma once
#include <string>
#include <vector>

#include "pipeline/executor.hpp"

namespace kevlaya::cli {

// `rows` (the first is the header) as lines indented by two spaces; `right[i]` right-aligns column i.
// Widths count code points: pass cells through printable() first.
std::string format_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

// The per-stage table of a run: stage, model, calls, invalid, ms/call, tok/s.
std::string stage_table(const pipeline::RunSummary& s);

}  // namespace kevlaya::cli
