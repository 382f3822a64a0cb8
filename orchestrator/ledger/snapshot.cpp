#include "ledger/snapshot.hpp"

#include <atomic>

namespace kevlaya::ledger {

namespace {
std::atomic<long> g_live{0};
}  // namespace

Snapshot::Snapshot(config::Config c, std::optional<Plan> p) : config(std::move(c)), plan(std::move(p)) { ++g_live; }

Snapshot::~Snapshot() { --g_live; }

long Snapshot::live() { return g_live.load(); }

SnapshotPtr make_snapshot(config::Config cfg, std::optional<Plan> plan) {
  return std::make_shared<const Snapshot>(std::move(cfg), std::move(plan));
}

config::ConfigPtr config_of(const SnapshotPtr& s) { return config::ConfigPtr(s, &s->config); }

}  // namespace kevlaya::ledger
