// Helpers for the warm-switch tests: run a coroutine, build a profile, send a completion.
#pragma once
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <filesystem>
#include <string>

#include "config/config.hpp"
#include "supervisor/process_effects.hpp"
#include "support/coro.hpp"  // run_co
#include "upstream/client.hpp"

namespace kevlaya::test {

namespace asio = boost::asio;

// A profile with fast health/stop settings, ctx 2048, one slot, slot_cache enabled.
config::Profile warm_profile(const std::string& name, const std::string& binary, const std::filesystem::path& model);

// Orchestrator settings rooted in `dir` (state/, logs/), prefetch as given.
config::OrchestratorCfg warm_orch(const std::filesystem::path& dir, bool prefetch);

// A prompt of `n` distinct words sharing nothing with another seed's prompt.
std::string long_prompt(int n, const std::string& seed = "w");

// POST /completion; returns timings.prompt_n (tokens actually processed), or -1 on failure.
int prompt_n(asio::io_context& ioc, const upstream::Endpoint& ep, const std::string& prompt);

supervisor::StartOutcome start(asio::io_context& ioc, supervisor::ProcessEffects& fx, const config::Profile& p);
supervisor::StopReport stop(asio::io_context& ioc, supervisor::ProcessEffects& fx, const std::string& name);

}  // namespace kevlaya::test
