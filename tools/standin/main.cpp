// llama-server stand-in: a test double of llama.cpp's llama-server (b10470) for the
// orchestrator's tests. Same flags, endpoints, log lines and exit codes; no real inference.
// Sequence (as the real server): parse flags -> bind -> load (503 meanwhile) -> "model loaded"
// -> signal handlers -> "listening on"; first SIGTERM/SIGINT drains and exits 0, a second exits 1.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "app.hpp"
#include "faults.hpp"
#include "http_server.hpp"
#include "log.hpp"
#include "model_load.hpp"
#include "options.hpp"

namespace standin {
namespace {

constexpr std::chrono::seconds kShutdownDrain{10};  // bound on finishing in-flight requests

struct Run {
  net::io_context ioc{1};
  Options opt;
  App app;
  HttpServer http;
  int port = 0;
  int exit_code = 0;
  bool stopping = false;
  net::signal_set signals{ioc};

  Run(Options o, Script s)
      : opt(o), app(ioc, std::move(o), std::move(s)),
        http(ioc, [this](const HttpRequest& r, Responder& w) { return app.handle(r, w); }) {}

  void finish(int code) {
    exit_code = code;
    ioc.stop();
  }

  std::string listening_address() const {
    const bool v6 = opt.host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + opt.host + "]" : opt.host) + ":" + std::to_string(port);
  }

  void on_signal() {
    signals.async_wait([this](boost::system::error_code ec, int) {
      if (ec) return;
      if (stopping) terminate_immediately();
      stopping = true;
      on_signal();  // keep listening for the second one
      net::co_spawn(ioc, shutdown(), net::detached);
    });
  }

  net::awaitable<void> shutdown() {
    http.stop_accepting();
    co_await app.drain(kShutdownDrain);
    logf(Level::info, "srv  %s: operator(): cleaning up before exit...", fn12("operator()").c_str());
    finish(0);
  }

  net::awaitable<void> load() {
    auto info = read_model(opt);
    if (!info) {
      print_exit_lines("model loading error");
      co_return finish(1);
    }
    const int ms = opt.fake_load_ms ? *opt.fake_load_ms : default_load_ms(info->file_size);
    net::steady_timer t(ioc, std::chrono::milliseconds(ms));
    boost::system::error_code ec;
    co_await t.async_wait(net::redirect_error(net::use_awaitable, ec));
    auto model = finish_load(opt, *info);
    if (!model) {
      print_exit_lines("model loading error");
      co_return finish(1);
    }
    fake_rss(opt.fake_rss_mib);
    app.set_ready(std::move(*model));
    logf(Level::info, "srv  %s: model loaded", fn12("llama_server").c_str());
    signals.add(SIGINT);
    if (!opt.fake_ignore_sigterm) signals.add(SIGTERM);
    on_signal();
    logf(Level::info, "srv  %s: listening on %s", fn12("llama_server").c_str(), listening_address().c_str());
  }
};

void print_cors_warning() {
  const std::string f = fn12("llama_server");
  logf(Level::warn, "srv  %s: -----------------", f.c_str());
  logf(Level::warn, "srv  %s: CORS is set to allow all origins ('*') and no API key is set", f.c_str());
  logf(Level::warn, "srv  %s: this can be a security risk (cross-origin attacks)", f.c_str());
  logf(Level::warn, "srv  %s: more info: https://github.com/ggml-org/llama.cpp/pull/25655", f.c_str());
  logf(Level::warn, "srv  %s: -----------------", f.c_str());
}

int run_server(Options opt) {
  Script script;
  if (!opt.responses_path.empty()) {
    if (auto err = script.load(opt.responses_path)) {
      logf(Level::error, "srv  %s: stand-in: %s", fn12("llama_server").c_str(), err->c_str());
      return 1;
    }
  }
  if (opt.api_keys.empty()) print_cors_warning();
  Run run(opt, std::move(script));
  const auto bound = opt.fake_bind_fail ? std::nullopt : run.http.bind(opt.host, opt.port);
  if (!bound) {
    logf(Level::error, "srv  %s: couldn't bind HTTP server socket, hostname: %s, port: %d", fn12("start").c_str(),
         opt.host.c_str(), opt.port);
    print_exit_lines("HTTP server error");
    return 1;
  }
  run.port = *bound;
  run.http.start();
  net::co_spawn(run.ioc, run.load(), net::detached);
  run.ioc.run();
  return run.exit_code;
}

}  // namespace
}  // namespace standin

int main(int argc, char** argv) {
  using namespace standin;
  std::signal(SIGPIPE, SIG_IGN);
  Options opt;
  switch (parse_options(argc, argv, opt)) {
    case ParseOutcome::exit_ok: return 0;
    case ParseOutcome::exit_error: return 1;
    case ParseOutcome::run: break;
  }
  log_configure(opt.verbosity, opt.log_disable);
  if (opt.fake_ignore_sigterm) ignore_sigterm();
  if (opt.fake_exit_before_listen) {
    // The real server always logs its start-up lines before it can fail; so does the double.
    logf(Level::info, "srv          main: build: b10470-standin; exiting early with code %d (fault injection)",
         *opt.fake_exit_before_listen);
    return *opt.fake_exit_before_listen;
  }
  if (opt.model_path.empty()) {
    std::fprintf(stderr, "error: the stand-in needs -m/--model (router mode is not modelled)\n");
    return 1;
  }
  return run_server(std::move(opt));
}
