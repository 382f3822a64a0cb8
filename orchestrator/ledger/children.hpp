// The children one configuration runs: the plan's ChildSpecs bound to that configuration's
// profiles. The supervisor keeps one per child, starts it as it is (Effects::start) and compares
// keys on reload; nothing else describes a running child's settings.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ledger/plan.hpp"

namespace kevlaya::ledger {

using ChildPtr = std::shared_ptr<const ChildSpec>;

// Binds `planned` (a plan's children) to `cfg`: a lone child runs its own profile (a pointer into
// `cfg`, which it keeps alive; a copy with the child's `placement` when it has one: the
// configuration itself is never placed); a shared one runs its first member's settings under its
// own name, without aliases, with every adapter of `adapters` at scale 0 (each request's `lora`
// field selects its member's). Every spawning profile the plan left out (refused, or no plan) runs alone, unpriced.
// A shared child whose members are not two or more spawning profiles in no other child is dropped
// with a warning and its members run alone. Config order.
std::vector<ChildPtr> bind_children(const config::ConfigPtr& cfg, const std::vector<ChildSpec>& planned);

// `p` run alone, unpriced: what a spawning profile the plan left out runs as.
ChildPtr lone_child(std::shared_ptr<const config::Profile> p);

// `c` holding a copy of its own profile instead of a pointer into its configuration: what a child
// that left the configuration keeps until it has stopped, so that the old version can be freed.
ChildPtr detach(const ChildSpec& c);

}  // namespace kevlaya::ledger
