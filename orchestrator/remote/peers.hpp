// Peers (`peers:` in kevlaya.yaml): other kevlaya-orch doors whose models become remote profiles
// of this one, so one front door serves the models of several machines while each machine keeps
// its own one-at-a-time rotation. The list is read when the door starts.
#pragma once
#include <chrono>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"

namespace kevlaya::remote {

// Pure: for a reloaded configuration `next`, the models imported from peers at start (profiles of
// `running` with a `peer`) whose peer `next` still lists, added back: a reload does not ask the peers
// again (a peer added by the reload needs a restart). Errors: a reloaded profile now takes the name
// of an imported model (as at start).
Status carry_imported(config::Config& next, const config::Config& running);

// Asks every peer for its models (GET /v1/models, retried every second for up to `wait`: a node
// may start after the front door) and adds them to `cfg`. Errors: a peer that never answers, a
// bad answer, or a name clash. Blocking; called once at startup.
Status import_peers(config::Config& cfg, std::chrono::milliseconds wait);

}  // namespace kevlaya::remote
