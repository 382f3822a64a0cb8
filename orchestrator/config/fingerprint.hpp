// What reaches a child, in one place: its argv as llama-server reads it and its
// environment. Reload (does a child restart?), shared-base grouping (may profiles share a child?)
// and the KV slot files (may saved slots be restored?) all compare this one derivation, so no list
// of profile fields is kept twice and a flag set through extra_args or env is never missed.
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::config {

// How much of a child's setup a fingerprint covers.
enum class FingerprintScope {
  child,  // everything the child receives
  base,   // without what differs between members of one shared base (LoRA adapters, --alias) and
          // without the placement, which is chosen for the group after grouping
};

// build_argv with placeholder host and port and no per-spawn extras (slot path, API key): the argv
// every per-profile comparison reads.
std::vector<std::string> child_argv(const Profile& p);

// The child's setup as one canonical text: the backend, then for llama-server its binary, each known
// flag's effective value in the table's spelling (the last one wins, as in llama-server; LoRA
// adapters add up, in order), the unknown words in order, then the environment (env with
// placement_env over it). Equal for children that run alike (`ctx: 8192` and
// `extra_args: [-c, 8192]`); a command backend's filled template is taken word for word.
std::string fingerprint(const Profile& p, FingerprintScope scope = FingerprintScope::child);

// fingerprint plus how the child is reached, started and stopped (port, remote URL, health, stop
// grace, slot cache): a reload keeps a running child exactly when this is unchanged. Idle, pin,
// eviction and alias settings change nothing in a running child and are not part of it.
std::string child_key(const Profile& p);

}  // namespace kevlaya::config
