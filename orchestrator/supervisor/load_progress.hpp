// How far a starting llama-server has got, read from the lines it logged since its spawn (pure).
// Stages follow what llama.cpp b10470 prints at -lv 4 (docs/lifecycle.md): "reading model"
// (load_model: loading model), "reading metadata" (llama_model_loader: loaded meta data),
// "loading tensors" (load_tensors: ..., with "N/M layers on GPU" from "offloaded N/M layers"),
// "creating context" (llama_context: constructing), "warming up" (warming up the model),
// "initializing slots" (load_model: initializing), "listening". A line of dots after
// load_tensors (llama.cpp's progress callback: one per percent) gives `pct`.
#pragma once
#include <optional>
#include <string_view>

#include "supervisor/types.hpp"

namespace kevlaya::supervisor {

// `log` is the child's output since its spawn (any line prefix, e.g. a timestamp, is allowed).
// Nothing recognised -> stage "starting", pct unset.
LoadProgress parse_load_progress(std::string_view log);

// Writes the load's ETA into `p` from the expected load time and the time taken so far: while
// under the estimate, eta_s is the time left; past it there is no ETA to give, so eta_s is unset
// and the stage says "taking longer than the estimated N s" (never "about 0 s left").
void apply_load_estimate(LoadProgress& p, double expected_s, double elapsed_s);

}  // namespace kevlaya::supervisor
