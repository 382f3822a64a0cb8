// How far a starting llama-server has got, read from the lines it logged since its spawn (pure).
// Stages follow what llama.cpp b10470 prints at -lv 4 (docs/lifecycle.md): "reading model"
// (load_model: loading model), "reading metadata" (llama_model_loader: loaded meta data),
// "loading tensors" (load_tensors: ..., with "N/M layers on GPU" from "offloaded N/M layers"),
// "creating context" (llama_context: constructing), "warming up" (warming up the model),
// "initializing slots" (load_model: initializing), "listening". A line of dots after
// load_tensors (llama.cpp's progress callback: one per percent) gives `pct`.
#pragma once
#include <string_view>

#include "supervisor/types.hpp"

namespace kevlaya::supervisor {

// `log` is the child's output since its spawn (any line prefix, e.g. a timestamp, is allowed).
// Nothing recognised -> stage "starting", pct unset.
LoadProgress parse_load_progress(std::string_view log);

}  // namespace kevlaya::supervisor
