#include "door_fixture.hpp"

#include "support/models.hpp"
#include "support/paths.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace kevlaya::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// ---- Event ----------------------------------------------------------------------------------

void Event::set() {
  std::lock_guard lk(mu_);
  set_ = true;
  cv_.notify_all();
}

bool Event::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return set_; });
}

bool Event::is_set() {
  std::lock_guard lk(mu_);
  return set_;
}

// ---- ScriptedUpstream -----------------------------------------------------------------------

ScriptedUpstream::ScriptedUpstream() : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  accept_thread_ = std::thread([this] {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s(ioc_);
      acceptor_.accept(s, ec);
      if (ec || stopping_) return;
      std::lock_guard lk(mu_);
      workers_.emplace_back([this, sock = std::move(s)]() mutable { serve(std::move(sock)); });
    }
  });
}

ScriptedUpstream::~ScriptedUpstream() {
  stopping_ = true;
  release_second.set();
  release_hold();
  boost::system::error_code ec;
  ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
  acceptor_.close(ec);
  accept_thread_.join();
  std::vector<std::thread> ws;
  {
    std::lock_guard lk(mu_);
    ws.swap(workers_);
  }
  for (auto& t : ws) t.join();
}

void ScriptedUpstream::release_hold() {
  std::lock_guard lk(mu_);
  hold_released_ = true;
  cv_.notify_all();
}

bool ScriptedUpstream::wait_held(int n, std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return held_ >= n; });
}

namespace {

void write_chunk(tcp::socket& s, const std::string& data) {
  std::string framed = [&] {
    char len[32];
    std::snprintf(len, sizeof len, "%zx\r\n", data.size());
    return std::string(len) + data + "\r\n";
  }();
  asio::write(s, asio::buffer(framed));
}

const std::string kTimings =
    R"("timings":{"prompt_n":3,"prompt_ms":1.5,"prompt_per_second":2000.0,"predicted_n":2,"predicted_ms":20.0,"predicted_per_second":100.0})";

}  // namespace

void ScriptedUpstream::serve(tcp::socket s) {
  boost::system::error_code ec;
  beast::flat_buffer buf;
  bhttp::request<bhttp::string_body> req;
  bhttp::read(s, buf, req, ec);
  if (ec) return;
  ++requests;
  const json body = json::parse(req.body(), nullptr, false);
  std::string mode = body.is_object() ? body.value("test_mode", "") : "";
  // Translated APIs (Ollama) forward only the fields they map: the mode rides in the message.
  constexpr std::string_view kInMessage = "test_mode:";
  if (mode.empty() && body.is_object() && body.contains("messages") && body["messages"].is_array() &&
      !body["messages"].empty() && body["messages"].back().value("content", json("")).is_string()) {
    const std::string text = body["messages"].back().value("content", "");
    if (text.rfind(kInMessage, 0) == 0) mode = text.substr(kInMessage.size());
  }
  auto reply = [&](int status, const std::string& text) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, "application/json; charset=utf-8");
    res.keep_alive(false);
    res.body() = text;
    res.prepare_payload();
    bhttp::write(s, res, ec);
  };
  if (mode == "stream_whole") {  // the head and the whole stream in one write (one read for the door)
    auto chunk = [](const std::string& data) {
      char len[32];
      std::snprintf(len, sizeof len, "%zx\r\n", data.size());
      return std::string(len) + data + "\r\n";
    };
    const std::string all =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n" +
        chunk("data: {\"choices\":[{\"delta\":{\"content\":\"chunk-1\"}}]}\n\n") +
        chunk("data: {\"choices\":[{\"delta\":{\"content\":\"chunk-2\"}}]," + kTimings + "}\n\n") +
        chunk("data: [DONE]\n\n") + "0\r\n\r\n";
    asio::write(s, asio::buffer(all), ec);
    return;
  }
  if (mode == "stream" || mode == "stream_hold") {
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n";
    asio::write(s, asio::buffer(head), ec);
    write_chunk(s, "data: {\"choices\":[{\"delta\":{\"content\":\"chunk-1\"}}]}\n\n");
    if (mode == "stream_hold") {
      char c;
      s.read_some(asio::buffer(&c, 1), ec);  // the door never sends more: this returns at close
      saw_disconnect.set();
      return;
    }
    release_second.wait(20s);
    write_chunk(s, "data: {\"choices\":[{\"delta\":{\"content\":\"chunk-2\"}}]," + kTimings + "}\n\n");
    write_chunk(s, "data: [DONE]\n\n");
    asio::write(s, asio::buffer(std::string("0\r\n\r\n")), ec);
    return;
  }
  if (mode == "huge" || mode == "huge_error") {  // `huge_bytes` of a JSON string, from one small buffer
    const std::uint64_t n = huge_bytes;
    const std::string head = std::string("HTTP/1.1 ") + (mode == "huge" ? "200 OK" : "500 Internal Server Error") +
                             "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(n) +
                             "\r\nConnection: close\r\n\r\n{\"x\":\"";
    asio::write(s, asio::buffer(head), ec);
    const std::string filler(64 * 1024, 'a');
    for (std::uint64_t sent = 6; !ec && sent < n - 2; sent += filler.size())  // {"x":" ... "}
      asio::write(s, asio::buffer(filler.data(), std::min<std::uint64_t>(filler.size(), n - 2 - sent)), ec);
    asio::write(s, asio::buffer(std::string("\"}")), ec);
    return;
  }
  if (mode == "hold") {
    std::unique_lock lk(mu_);
    ++held_;
    cv_.notify_all();
    cv_.wait_for(lk, 20s, [&] { return hold_released_; });
  }
  if (mode == "missing")  // llama-server's answer for a path it does not have
    return reply(404, R"({"error":{"code":404,"message":"File Not Found","type":"not_found_error"}})");
  if (mode == "error")
    return reply(400, R"({"error":{"code":400,"message":"bad thing","type":"invalid_request_error"}})");
  if (mode == "crash") {
    if (on_crash) on_crash();
    s.close(ec);
    return;
  }
  json out = {{"object", "chat.completion"},
              {"choices", {{{"message", {{"role", "assistant"}, {"content", "hello"}}}}}},
              {"echo", body.is_discarded() ? json() : body},  // GET: no body
              {"target", std::string(req.target())}};
  reply(200, out.dump().substr(0, out.dump().size() - 1) + "," + kTimings + "}");
}

// ---- fake effects + Door --------------------------------------------------------------------

namespace {

config::Profile profile(const std::string& name, std::vector<std::string> alias = {}) {
  config::Profile p;
  p.name = name;
  p.alias = std::move(alias);
  p.parallel = 1;
  p.restart.max_restarts = 1;
  return p;
}

}  // namespace

Door::Door(DoorOptions o) {
  world_.upstream_port = up_.port();
  world_.start_delay = std::chrono::milliseconds(o.load_ms);
  world_.stop_delay = 0ms;
  world_.pid = 0;
  world_.report_load_time = true;
  if (o.broken_profile) {
    auto& f = world_.always_fail["broken"];
    f.kind = supervisor::FailureKind::cuda_oom;
    f.message = "cudaMalloc failed: out of memory";
    f.hint = "lower ngl";
    f.log_tail = {kBrokenLogLine};
  }
  cfg_.profiles.push_back(profile("kev", {"k"}));
  cfg_.profiles.push_back(profile("laya"));
  if (o.broken_profile) cfg_.profiles.push_back(profile("broken"));
  config::Pipeline pl;
  pl.name = "decide-verify";
  cfg_.pipelines.push_back(pl);
  cfg_.orch.queue.max_depth = o.max_depth;
  cfg_.orch.queue.max_wait_s = o.max_wait_s;
  cfg_.orch.api_keys = o.api_keys;
  cfg_.orch.admin_api_keys = o.admin_api_keys;
  cfg_.orch.limits.max_body_bytes = o.max_body_bytes;
  cfg_.orch.limits.max_connections = o.max_connections;
  cfg_.orch.limits.read_timeout_s = o.read_timeout_s;
  cfg_.orch.limits.idle_timeout_s = o.idle_timeout_s;
  cfg_.orch.limits.header_timeout_s = o.header_timeout_s;
  cfg_.orch.limits.reserved_connections = o.reserved_connections;
  cfg_.orch.limits.max_answer_bytes = o.max_answer_bytes;
  cfg_.orch.allowed_hosts = o.allowed_hosts;
  cfg_.orch.cors.allowed_origins = o.allowed_origins;
  cfg_.orch.runs = o.runs;
  cfg_.orch.state_dir = o.state_dir;
  cfg_.orch.activity = o.activity;
  cfg_.orch.capture = o.capture;
  cfg_.orch.listen.port = 0;
  supervisor::SupervisorOptions so_sup;
  so_sup.serial_executor = true;  // like the runtime's: ioc_ is run by thread_ alone
  if (o.two_gpus) {  // what runtime::setup_residency gives for a 6 + 8 GB machine
    cfg_.profiles[0].placement = {{0}, "0", {}, 0};
    cfg_.profiles[1].placement = {{1}, "1", {}, 0};
    so_sup.allowed_sets = {{"kev", "laya"}};
    so_sup.devices = {{0, "sim0", 6144}, {1, "sim1", 8192}};
  }
  const auto shared = ledger::make_snapshot(cfg_);  // door and supervisor share one version
  sup_ = std::make_unique<supervisor::Supervisor>(ioc_.get_executor(), ledger::config_of(shared),
                                                  std::make_unique<FakeEffects>(world_), so_sup);
  auto so = http::ServerOptions::from(cfg_.orch);
  so.events_keepalive = o.events_keepalive;
  so.events_buffer = o.events_buffer;
  server_ = std::make_unique<http::Server>(*sup_, shared, so, o.runner);
  auto port = server_->listen();
  if (!port) throw std::runtime_error(port.error().message);
  port_ = *port;
  server_->start();
  thread_ = std::thread([this] { ioc_.run(); });
}

Door::~Door() {
  auto stop = [this]() -> asio::awaitable<void> {
    co_await server_->stop();
    co_await sup_->shutdown();
  };
  asio::co_spawn(ioc_, stop, asio::use_future).wait_for(30s);
  ioc_.stop();
  thread_.join();
}

supervisor::Snapshot Door::snapshot() {
  return asio::co_spawn(ioc_, sup_->snapshot(), asio::use_future).get();
}

void Door::report_crash(const std::string& profile) {
  supervisor::ChildFailure f;
  f.kind = supervisor::FailureKind::crashed;
  f.signal = 6;
  f.message = "killed by SIGABRT";
  world_.report_crash(profile, f);
}

int Door::starts() const { return world_.starts.load(); }

std::string chat_body(const std::string& model, const std::string& mode, bool stream) {
  json b = {{"model", model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  if (!mode.empty()) b["test_mode"] = mode;
  if (stream) b["stream"] = true;
  return b.dump();
}

void write_api_config(const std::filesystem::path& dir, const std::string& binary) {
  const auto common = "binary: " + binary + "\nmodel: " + tiny_llama().string() +
                      "\nngl: 0\nctx: 256\nparallel: 1\nshared_base: false\n";
  write_text(dir / "profiles/kev.yaml", "name: kev\nalias: [k]\n" + common);
  write_text(dir / "profiles/laya.yaml", "name: laya\n" + common);
  write_text(dir / "profiles/emb.yaml", "name: emb\n" + common + "extra_args: [--embeddings, --pooling, mean]\n");
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\n"
                                   "log_dir: logs\nresidency: rotate\n");
}

}  // namespace kevlaya::test
