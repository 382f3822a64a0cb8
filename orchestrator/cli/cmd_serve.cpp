// `kevlaya-orch serve [CONFIG] [--host H] [--port P]`: the REST front door in the foreground.
// SIGINT/SIGTERM: stop accepting, finish in-flight requests (bounded), stop every child, exit 0.
#include <utility>  // before Asio: boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "common/loopback.hpp"
#include "cli/pipeline_runner.hpp"
#include "config/config.hpp"
#include "http/server.hpp"
#include "runtime/reload.hpp"
#include "runtime/runtime.hpp"
#include "supervisor/child_output.hpp"
#include "supervisor/supervisor.hpp"

namespace kevlaya::cli {
namespace {

namespace asio = boost::asio;

struct ServeArgs {
  std::string config;
  std::string models_dir;
  std::optional<std::string> host;
  std::optional<int> port;
  bool watch_config = false;
  bool child_output = false;
};

constexpr std::chrono::milliseconds kWatchInterval{1000};  // --watch-config polls this often

http::ReloadOutcome to_outcome(const runtime::ReloadReport& r) {
  http::ReloadOutcome o;
  o.ok = r.ok || r.deferred;  // deferred is not invalid: nothing changed yet, it runs again by itself
  o.errors = r.errors;
  o.changed = r.diff.changed;
  o.added = r.diff.added;
  o.removed = r.diff.removed;
  o.unchanged = r.diff.unchanged;
  o.needs_restart = r.needs_restart;
  return o;
}

// The door's options for one snapshot, at startup and after each reload alike (each carries its
// plan: /status "gpu").
http::ServerOptions door_options(const config::Config& cfg, const std::optional<ledger::Plan>& plan) {
  auto opt = http::ServerOptions::from(cfg.orch);
  if (plan) opt.gpu_plan = http::plan_json(*plan);  // /status "gpu"
  return opt;
}

int serve(const ServeArgs& args) {
  const config::Source source{args.config, args.models_dir};
  auto loaded = config::load(source);
  for (const auto& d : loaded.diagnostics) std::cerr << d.format() << "\n";
  if (!loaded.ok()) return kExitFailure;
  config::Config cfg = std::move(loaded.config);
  const auto overrides = [host = args.host, port = args.port](config::Config& c) {
    if (host) c.orch.listen.host = *host;
    if (port) c.orch.listen.port = *port;
  };
  overrides(cfg);
  supervisor::echo_child_output(args.child_output);
  if (!is_loopback_host(cfg.orch.listen.host) && cfg.orch.api_keys.empty())
    spdlog::warn("serving on {} without api_keys: anyone who can reach it can use the models",
                 cfg.orch.listen.host);

  auto rt = runtime::Runtime::open(cfg);
  if (!rt) return fail_with("serve", rt.error());
  auto& ioc = (*rt)->ioc();
  auto& sup = (*rt)->sup();
  const auto& served = (*rt)->snapshot();  // with the peers' models imported (read before any reload)
  const auto opt = door_options(served->config, served->plan);
  // Pipeline runs go through the same supervisor as model calls (one model call at a time per task).
  auto runner = std::make_shared<ConfigPipelineRunner>(ioc.get_executor(), sup, ledger::config_of(served));
  http::Server door(sup, served, opt, runner);
  // Hot reload (docs/lifecycle.md): SIGHUP, POST /admin/reload, --watch-config.
  runtime::Reloader reloader(**rt, source, overrides, [&door, runner](const ledger::SnapshotPtr& s) {
    door.set_config(s, door_options(s->config, s->plan));
    runner->set_config(ledger::config_of(s));
  });
  door.set_reload([&reloader]() -> asio::awaitable<http::ReloadOutcome> {
    co_return to_outcome(co_await reloader.reload());
  });
  (*rt)->on_hangup([&reloader, &ioc] {
    asio::co_spawn(ioc, [&reloader]() -> asio::awaitable<void> { co_await reloader.reload(); }, asio::detached);
  });
  if (args.watch_config) reloader.watch(kWatchInterval);
  auto port = door.listen();
  if (!port) return fail_with("serve", port.error());
  std::fprintf(stderr, "kevlaya: listening on http://%s:%u\n", opt.host.c_str(),
               static_cast<unsigned>(*port));
  std::fflush(stderr);
  door.start();
  sup.start_wanted();  // preload and pins: the door already answers /health (docs/lifecycle.md)
  // A signal is serve's normal end: drain the door, stop the children, exit 0.
  (*rt)->on_first_signal({}, [&door]() -> asio::awaitable<void> { co_await door.stop(); });
  (*rt)->run({});
  spdlog::info("kevlaya: stopped");
  return kExitOk;
}

}  // namespace

void add_serve(CLI::App& app, Globals& g) {
  auto args = std::make_shared<ServeArgs>();
  auto* sub = app.add_subcommand(
      "serve", "the REST front door (OpenAI-compatible routing with swaps, pipeline runs)");
  sub->add_option("config", args->config, "kevlaya.yaml (default: profiles/ and pipelines/ here)");
  sub->add_option("--models-dir", args->models_dir,
                  "serve every GGUF model of DIR, ngl/ctx/parallel fitted to the GPU (overrides models_dir)");
  sub->add_option("--host", args->host, "listen address (default: listen.host, 127.0.0.1)");
  sub->add_option("--port", args->port, "listen port; 0 = any free port (default: listen.port)")
      ->check(CLI::Range(0, 65535));
  sub->add_flag("--watch-config", args->watch_config,
                "reload when kevlaya.yaml or a profile/pipeline file changes (polled every second)");
  sub->add_flag("--child-output", args->child_output,
                "also write every child's output to stderr as '[NAME] line' (as llama-server prints its log)");
  sub->callback([&g, args] { g.exit_code = serve(*args); });
}

}  // namespace kevlaya::cli
