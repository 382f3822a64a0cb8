// Phase: the one state of a child, and its transition table (plain values: the pure scheduler
// uses it too). docs/supervisor.md draws the same diagram.
#pragma once
#include <string_view>

namespace kevlaya::supervisor {

// The one phase of a child: the scheduler, status, metrics, /v1/models, /events and the CLI all
// read this value, under these names. Allowed transitions (anything else is a bug):
//
//            start             healthy           drain
//   stopped ───────► starting ───────► ready ───────► draining
//      ▲               │   │             │               │
//      │ reaped        │   │ shutdown    │ stop / crash  │ stop (idle, or drain_timeout_s)
//      │               │   ▼             ▼               ▼
//      └───────────────┼─ stopping ◄─────┴───────────────┘
//                      │      │ reaped after a crash
//        start failed  ▼      ▼
//                     failed ──── backoff over, nobody waits ───► stopped
//                        └─────── restart after the backoff ─────► starting
//   A process that dies while ready or draining goes through stopping (reaped, then failed).
//
// `failed`: not running, and no start before its backoff (or crash-loop cooldown) ends.
enum class Phase { stopped, starting, ready, draining, stopping, failed };
std::string_view to_string(Phase p);
// True when `from -> to` is in the table above (a phase may also be "set" to itself: no change).
bool transition_allowed(Phase from, Phase to);
// Checks `from -> to` against the table: a bad transition is a bug (logged; aborts in debug
// builds). Returns `to`, for `phase = checked_transition(phase, to, name)`.
Phase checked_transition(Phase from, Phase to, std::string_view child);
// Alive = a process exists or is being started/stopped (starting, ready, draining, stopping).
bool is_alive(Phase p);

}  // namespace kevlaya::supervisor
