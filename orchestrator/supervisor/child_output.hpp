// Whether every child's output lines also go to the door's stderr, as "[NAME] line" (serve
// --child-output): one stream for a terminal, `docker logs` or journald, as llama-server prints
// its own log. Off by default: the lines go to log_dir/NAME.log and /logs/{model} only.
#pragma once

namespace kevlaya::supervisor {

// Set once at startup, before any child starts (any thread may read it afterwards).
void echo_child_output(bool on);

}  // namespace kevlaya::supervisor
