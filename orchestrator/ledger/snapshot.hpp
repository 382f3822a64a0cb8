// One applied configuration and the residency plan made for it, immutable once published. The
// startup path makes the first, each reload the next; the door, the supervisor, the process effects
// and the pipeline runner share it by pointer, and each call holds the one it started with, so an
// old snapshot is freed when the last call or child that still follows it ends.
#pragma once
#include <memory>
#include <optional>

#include "config/config.hpp"
#include "ledger/plan.hpp"

namespace kevlaya::ledger {

struct Snapshot {
  Snapshot(config::Config c, std::optional<Plan> p);
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  const config::Config config;
  const std::optional<Plan> plan;  // the plan followed (/status "gpu"); none when not planned

  static long live();  // snapshots alive in this process now (/metrics; a reload frees the last one's)
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

SnapshotPtr make_snapshot(config::Config cfg, std::optional<Plan> plan = {});

// `s`'s configuration, as a pointer that keeps `s` alive.
config::ConfigPtr config_of(const SnapshotPtr& s);

}  // namespace kevlaya::ledger
