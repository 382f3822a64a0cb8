// Helpers for supervisor tests: run a coroutine to completion, build configs, inspect /proc.
#pragma once
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "support/coro.hpp"  // run_co, sleep_for, in

namespace kevlaya::test {

namespace asio = boost::asio;

// A profile named `name` that runs `binary` on `model`, with fast health/stop/restart settings.
config::Profile fast_profile(const std::string& name, const std::string& binary,
                             const std::filesystem::path& model, std::vector<std::string> extra = {});

// Fast scheduling settings (no grouping delay, no residency floor).
config::Config fast_config(std::vector<config::Profile> profiles, const std::filesystem::path& dir);

// Pids of live (non-zombie) processes whose argv contains `needle`.
std::vector<int> pids_with_arg(const std::string& needle);
bool alive(int pid);  // exists and is not a zombie
// Live processes whose argv contains `needle` and that lead their own process group.
int group_leaders_with_arg(const std::string& needle);
int count_fds();      // entries in /proc/self/fd
int count_threads();  // entries in /proc/self/task

}  // namespace kevlaya::test
