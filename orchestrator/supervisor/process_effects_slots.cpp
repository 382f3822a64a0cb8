// KV slot persistence of ProcessEffects (profile slot_cache.enabled): POST /slots/N?action=save
// before a child stops, action=restore after the next start. Every failure is logged and skipped:
// the request then simply runs cold.
#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "supervisor/process_effects.hpp"
#include "warm/slot_cache.hpp"

namespace kevlaya::supervisor {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Bounds one save/restore call: a slot still busy (a request cut by drain_timeout_s) is deferred by
// llama-server, and a switch must not hang on it.
constexpr auto kSlotCallTimeout = std::chrono::seconds(10);

upstream::Request slot_request(int slot, const char* action, const std::string& filename) {
  upstream::Request req;
  req.method = "POST";
  req.target = "/slots/" + std::to_string(slot) + "?action=" + action;
  req.body = json{{"filename", filename}}.dump();
  req.timeout = kSlotCallTimeout;
  return req;
}

// The response's `field` (n_saved / n_restored), or an error text.
Result<std::int64_t> slot_count(const Result<upstream::Response>& res, const char* field) {
  if (!res) return res.error();
  auto body = json::parse(res->body, nullptr, false);
  if (res->status != 200 || !body.is_object() || !body.contains(field)) {
    std::string msg = "HTTP " + std::to_string(res->status);
    if (body.is_object() && body.contains("error") && body["error"].is_object())
      msg += ": " + body["error"].value("message", std::string());
    return make_error(Errc::upstream_error, msg);
  }
  return body[field].is_number_integer() ? body[field].get<std::int64_t>() : 0;
}

}  // namespace

std::optional<ProcessEffects::SlotPlan> slot_plan(const config::Profile& p, const fs::path& state_dir) {
  const auto dir = warm::slot_save_dir(p, state_dir);
  if (!dir) return std::nullopt;
  auto key = warm::slot_key(p);
  if (!key) {
    spdlog::warn("{}: slot cache off for this start: {}", p.name, key.error().message);
    return std::nullopt;
  }
  ProcessEffects::SlotPlan plan{*dir, *key, std::max(1, p.parallel),
                                p.slot_cache.max_bytes};
  std::error_code ec;
  fs::create_directories(plan.dir, ec);
  if (ec) {
    spdlog::warn("{}: slot cache off: cannot create {}: {}", p.name, plan.dir.string(), ec.message());
    return std::nullopt;
  }
  return plan;
}

asio::awaitable<void> ProcessEffects::restore_slots(const SlotPlan& plan, const upstream::Endpoint& ep,
                                                    StartReport& rep) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ex = co_await asio::this_coro::executor;
  for (int slot = 0; slot < plan.slots; ++slot) {
    const std::string name = warm::slot_file_name(plan.key, slot);
    std::error_code ec;
    if (!warm::safe_file_name(name) || !fs::exists(plan.dir / name, ec)) continue;  // nothing saved for this setup
    const upstream::Request req = slot_request(slot, "restore", name);
    const auto res = co_await upstream::fetch(ex, ep, req);
    auto n = slot_count(res, "n_restored");
    if (!n) {
      spdlog::warn("slot restore {} (slot {}) failed, the next prompt runs cold: {}", name, slot, n.error().message);
      continue;
    }
    fs::last_write_time(plan.dir / name, fs::file_time_type::clock::now(), ec);  // recently used: evicted last
    ++rep.slots_restored;
    spdlog::info("slot {} restored from {}: {} tokens", slot, name, *n);
  }
  rep.restore_ms = ms_since(t0);
}

asio::awaitable<void> ProcessEffects::save_slots(const SlotPlan& plan, const upstream::Endpoint& ep,
                                                 StopReport& rep) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ex = co_await asio::this_coro::executor;
  for (int slot = 0; slot < plan.slots; ++slot) {
    const std::string name = warm::slot_file_name(plan.key, slot);
    const std::string part = name + ".part";  // an empty or failed save never replaces a good file
    if (!warm::safe_file_name(part)) continue;
    const upstream::Request req = slot_request(slot, "save", part);
    const auto res = co_await upstream::fetch(ex, ep, req);
    auto n = slot_count(res, "n_saved");
    std::error_code ec;
    if (!n || *n == 0) {
      if (!n) spdlog::warn("slot save {} (slot {}) failed: {}", name, slot, n.error().message);
      fs::remove(plan.dir / part, ec);
      continue;
    }
    fs::rename(plan.dir / part, plan.dir / name, ec);
    if (ec) {
      spdlog::warn("slot save {}: cannot rename: {}", name, ec.message());
      fs::remove(plan.dir / part, ec);
      continue;
    }
    ++rep.slots_saved;
    spdlog::info("slot {} saved to {}: {} tokens", slot, name, *n);
  }
  if (int removed = warm::enforce_cap(plan.dir, plan.max_bytes))
    spdlog::info("slot cache {}: evicted {} old file(s) over slot_cache.max_bytes", plan.dir.string(), removed);
  rep.save_ms = ms_since(t0);
}

}  // namespace kevlaya::supervisor
