// Child process lifecycle. Boost.Process v1 only spawns (then the child is detached); exit is
// observed through a pidfd (readable when the process exits) and reaped with waitpid.
#include "supervisor/child.hpp"
#include "supervisor/child_output.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/process.hpp>
#include <atomic>
#include <cstdio>
#include <map>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "config/backend.hpp"
#include "supervisor/spawn_setup.hpp"
#include "supervisor/state_file.hpp"
#include "supervisor/stop_command.hpp"
#include "upstream/client.hpp"

namespace kevlaya::supervisor {

namespace bp = boost::process;
namespace fs = std::filesystem;

using std::chrono::milliseconds;
using SClock = std::chrono::steady_clock;

namespace {

std::atomic<bool> g_echo_output{false};  // serve --child-output (child_output.hpp)

constexpr auto kPipeDrainWait = milliseconds(300);   // exit -> last log lines read
constexpr auto kExitPoll = milliseconds(20);         // fallback when pidfd_open is unavailable
constexpr auto kKillReapWait = std::chrono::seconds(10);
constexpr std::size_t kPipeReadBytes = 16 * 1024;
// A serving child's output is read in batches, every kLogBatchMin, less often (up to kLogBatchMax)
// while it prints nothing; the pipe holds kPipeBytes meanwhile (Linux's default maximum).
constexpr auto kLogBatchMin = milliseconds(100);
constexpr auto kLogBatchMax = milliseconds(800);
constexpr int kPipeBytes = 1 << 20;
constexpr std::size_t kBatchReadMax = 4u << 20;  // per batch: a flood of output cannot hog the thread
constexpr std::size_t kMaxLineBytes = 64 * 1024;   // longer output without a newline is cut into lines

// The door's environment, less what would make a child listen or route as the door does:
// llama-server's LLAMA_ARG_* and router port, and Vertex AI's AIP_* (the door's port and routes).
// In Vertex AI mode a llama-server child serves /predict on its own port (the door forwards it).
bp::environment child_env(const ChildOptions& o) {
  const config::Profile& p = o.profile;
  bp::environment env = boost::this_process::environment();
  std::vector<std::string> drop;
  bool vertex = false;
  for (const auto& e : env) {
    const std::string name = e.get_name();
    if (name == "AIP_MODE") vertex = e.to_string() == "PREDICTION";
    bool inherited = name.rfind("LLAMA_ARG_", 0) == 0 || name == "LLAMA_SERVER_ROUTER_PORT" || name.rfind("AIP_", 0) == 0;
    if (inherited && !p.env.count(name)) drop.push_back(name);
  }
  for (const auto& n : drop) env.erase(n);
  if (vertex && config::backend_of(p).llama_server) {
    env.set("AIP_MODE", "PREDICTION");
    env.set("AIP_HTTP_PORT", std::to_string(o.port));
    env.set("AIP_PREDICT_ROUTE", "/predict");
    env.set("AIP_HEALTH_ROUTE", p.health.path);
  }
  // set(), not operator[]: Boost 1.74's find() compares "KEY=" with memcmp past the end of shorter
  // entries (ASan: heap-buffer-overflow with a long key such as CUDA_VISIBLE_DEVICES).
  for (const auto& [k, v] : p.env) env.set(k, v);
  for (const auto& [k, v] : config::placement_env(p.placement)) env.set(k, v);  // the GPU placement decides
  return env;
}

fs::path resolve_binary(const std::string& bin) {
  if (bin.find('/') != std::string::npos) return bin;
  return bp::search_path(bin).string();
}

int signal_number(const std::string& name) {
  static const std::map<std::string, int> sigs = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"QUIT", SIGQUIT},
                                                  {"HUP", SIGHUP},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  const auto it = sigs.find(name);
  return it == sigs.end() ? SIGTERM : it->second;
}

}  // namespace

void echo_child_output(bool on) { g_echo_output.store(on); }

class Child::Impl : public std::enable_shared_from_this<Child::Impl> {
 public:
  Impl(asio::io_context& ioc, ChildOptions opts)
      : ioc_(ioc), strand_(asio::make_strand(ioc)), opts_(std::move(opts)), wake_(strand_) {}
  ~Impl() { kill_and_reap_sync(); }

  asio::awaitable<StartOutcome> start();
  asio::awaitable<StopReport> stop();
  asio::awaitable<void> run_stop_command(StopReport& rep);
  void kill_and_reap_sync();
  bool exited_now() const;

  asio::io_context& ioc_;
  asio::strand<asio::io_context::executor_type> strand_;
  ChildOptions opts_;
  bool serving_ = false;  // became healthy; the child's phase is its supervisor's (phase.hpp)
  std::atomic<int> pid_{0};
  std::atomic<bool> reaped_{true};
  int exit_code_ = -1;
  int signal_ = 0;
  int open_pipes_ = 0;
  bool stop_requested_ = false;
  bool logs_closed_ = false;                     // stop() ran: batch readers read once more and end
  std::vector<asio::steady_timer*> batch_timers_;  // of the batch readers now waiting
  std::optional<SClock::time_point> listening_at_;
  SClock::time_point last_line_at_{};
  LineRing tail_{opts_.tail_lines};  // the last lines, for error reports
  ChildLog log_;
  std::unique_ptr<bp::async_pipe> out_, err_;
  std::unique_ptr<asio::posix::stream_descriptor> pidfd_;
  asio::steady_timer wake_;
  ChildRecord record_;
  std::function<void(ChildFailure)> on_exit_;

 private:
  std::optional<ChildFailure> spawn();
  void on_line(std::string_view raw);
  void take_lines(std::string& buf);
  asio::awaitable<void> read_lines(bp::async_pipe* pipe);
  asio::awaitable<void> read_batched(bp::async_pipe& pipe, std::string& buf);
  void drain_logs() {  // batch readers read now (an exit: the last lines matter at once)
    for (auto* t : batch_timers_) t->cancel();
  }
  asio::awaitable<void> watch_exit();
  void record_exit(int status);
  asio::awaitable<void> sleep_until(SClock::time_point t);
  asio::awaitable<bool> probe();
  asio::awaitable<ChildFailure> fail_start(FailureKind kind, std::string msg, std::string hint);
  asio::awaitable<ChildFailure> exit_failure();
  std::vector<std::string> tail() const { return tail_.lines(); }
  void wake() { wake_.cancel(); }
};

std::optional<ChildFailure> Child::Impl::spawn() {
  config::SpawnArgs spawn{opts_.host, std::to_string(opts_.port), opts_.slot_save_path.string(), opts_.api_key};
  // argv[0] is what runs, for every backend: the very words `kevlaya-orch args` prints.
  auto argv = config::build_argv(opts_.profile, spawn);
  const bool command = config::backend_of(opts_.profile).own_command;
  fs::path exe = argv.empty() ? fs::path() : resolve_binary(argv.front());
  if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) {
    ChildFailure f;
    f.kind = FailureKind::binary_not_found;
    f.message = (command ? "command not found or not executable: " : "server binary not found or not executable: ") +
                (argv.empty() ? std::string("(none)") : argv.front());
    f.hint = command ? "set the profile's `command` (its first word is the program)"
                     : "set `binary` in the profile to the llama-server path";
    return f;
  }
  out_ = std::make_unique<bp::async_pipe>(ioc_);
  err_ = std::make_unique<bp::async_pipe>(ioc_);
  for (auto* p : {out_.get(), err_.get()}) {  // ::pipe(), not pipe2: another child must not get ours
    set_cloexec(p->native_source());
    set_cloexec(p->native_sink());  // dup2 onto 1 and 2 clears the flag for this child
  }
  std::vector<std::string> args(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  std::error_code ec;
  bp::child c(bp::exe = exe.string(), bp::args = args, bp::env = child_env(opts_),
              bp::std_in < bp::null, bp::std_out > *out_, bp::std_err > *err_,
              SpawnSetup{}, ec);
  if (ec) {
    ChildFailure f;
    f.kind = FailureKind::binary_not_found;
    f.message = "cannot start " + exe.string() + ": " + ec.message();
    f.hint = "check that the binary exists and is executable";
    return f;
  }
  pid_ = c.id();
  reaped_ = false;
  c.detach();  // we observe and reap the process ourselves
  record_ = ChildRecord{pid_, pid_, proc_start_time(pid_), opts_.profile.name, {exe.string()}};
  record_.argv.insert(record_.argv.end(), args.begin(), args.end());
  record_.argv = mask_secrets(std::move(record_.argv));  // state files never hold the child's key
  if (!opts_.state_dir.empty()) {
    if (auto st = write_state(opts_.state_dir, record_); !st)  // a restart cannot reap this child
      spdlog::warn("{}: {}", opts_.profile.name, st.error().message);
  }
  return std::nullopt;
}

void Child::Impl::on_line(std::string_view raw) {
  while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
  last_line_at_ = SClock::now();
  if (!listening_at_) {
    const auto& ready_line = opts_.profile.health.ready_line;
    if (raw.find(ready_line.empty() ? std::string_view("listening on") : std::string_view(ready_line)) !=
        std::string_view::npos) {
      listening_at_ = last_line_at_;
      wake();  // probe at once instead of waiting for the next interval
    }
  }
  std::string& line = tail_.next();
  line.assign(raw);
  if (!opts_.api_key.empty()) {  // the key never reaches a log, whatever the server prints
    for (auto at = line.find(opts_.api_key); at != std::string::npos; at = line.find(opts_.api_key, at))
      line.replace(at, opts_.api_key.size(), config::kChildKeyPlaceholder);
  }
  log_.line(line);
  if (g_echo_output.load(std::memory_order_relaxed))
    std::fprintf(stderr, "[%s] %s\n", opts_.profile.name.c_str(), line.c_str());
}

// Every complete line of `buf` to on_line; the rest stays for the next read.
void Child::Impl::take_lines(std::string& buf) {
  std::size_t at = 0;
  for (std::size_t nl; (nl = buf.find('\n', at)) != std::string::npos; at = nl + 1)
    on_line(std::string_view(buf).substr(at, nl + 1 - at));
  buf.erase(0, at);
  if (buf.size() > kMaxLineBytes) {
    on_line(buf);
    buf.clear();
  }
  log_.write();
}

// Line by line while the child starts (the ready line and the stall timer need each one at once);
// once it serves, in batches (read_batched): a pipe the reactor watches wakes the door for every
// line a child prints, several per request, in the middle of the request's own work.
asio::awaitable<void> Child::Impl::read_lines(bp::async_pipe* pipe) {
  auto self = shared_from_this();
  std::string buf;
  buf.reserve(kPipeReadBytes);  // a whole burst of lines per read, not 512 bytes at a time
  bool open = true;
  // (Line by line for good with --child-output: the door's stderr shows a line when the child
  // prints it, as llama-server's own output would.)
  while (open && (!serving_ || g_echo_output.load(std::memory_order_relaxed))) {
    boost::system::error_code ec;
    co_await asio::async_read_until(*pipe, asio::dynamic_buffer(buf), '\n',
                                    asio::redirect_error(asio::use_awaitable, ec));
    open = !ec;
    take_lines(buf);
  }
  if (open) co_await read_batched(*pipe, buf);
  if (!buf.empty()) on_line(buf);
  log_.write();
  --open_pipes_;
  wake();
}

namespace {

// Reads all there is, up to kBatchReadMax; false once the pipe has closed (or failed).
bool read_available(int fd, std::string& buf, std::size_t& got) {
  char chunk[kPipeReadBytes];
  while (got < kBatchReadMax) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<std::size_t>(n));
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

}  // namespace

// The pipe leaves the reactor (a duplicate descriptor keeps it open) and is read on a timer until
// it closes or stop() ran; drain_logs() reads it at once.
asio::awaitable<void> Child::Impl::read_batched(bp::async_pipe& pipe, std::string& buf) {
  UniqueFd fd{::dup(pipe.native_source())};
  boost::system::error_code ec;
  pipe.close(ec);
  if (fd.fd < 0) co_return;
  ::fcntl(fd.fd, F_SETFL, ::fcntl(fd.fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(fd.fd, F_SETPIPE_SZ, kPipeBytes);  // best effort: room for a chatty child between batches
  asio::steady_timer timer(strand_);
  batch_timers_.push_back(&timer);
  struct Unregister {
    std::vector<asio::steady_timer*>& timers;
    asio::steady_timer* t;
    ~Unregister() { timers.erase(std::remove(timers.begin(), timers.end(), t), timers.end()); }
  } unregister{batch_timers_, &timer};
  auto every = kLogBatchMin;
  for (bool open = true; open;) {
    timer.expires_after(every);
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    const bool last = logs_closed_;
    std::size_t got = 0;
    open = read_available(fd.fd, buf, got) && !last;
    take_lines(buf);
    every = got > 0 ? kLogBatchMin : std::min(every * 2, kLogBatchMax);
  }
}

void Child::Impl::record_exit(int status) {
  reaped_ = true;
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
  if (!opts_.state_dir.empty()) remove_state(opts_.state_dir, record_);
}

asio::awaitable<void> Child::Impl::watch_exit() {
  auto self = shared_from_this();
  int status = 0;
  if (pidfd_) {
    boost::system::error_code ec;
    co_await pidfd_->async_wait(asio::posix::descriptor_base::wait_read,
                                asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;  // descriptor closed: the destructor kills and reaps
    ::waitpid(pid_, &status, 0);  // readable pidfd: the process has exited, this returns at once
  } else {
    asio::steady_timer t(strand_);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      t.expires_after(kExitPoll);
      co_await t.async_wait(asio::use_awaitable);
    }
  }
  record_exit(status);
  drain_logs();
  if (serving_ && !stop_requested_) {  // the process is gone: its owner hears of it once
    // Until the pipes close (bounded), so the failure carries the last lines the child wrote.
    auto f = co_await exit_failure();
    f.message = "child exited unexpectedly: " + f.message;
    spdlog::warn("{}: {}", opts_.profile.name, f.message);
    if (on_exit_) on_exit_(std::move(f));
  }
  wake();
}

// Waits until `t` or until something wakes us (a log line, an exit, a closed pipe).
asio::awaitable<void> Child::Impl::sleep_until(SClock::time_point t) {
  boost::system::error_code ec;
  wake_.expires_at(t);
  co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<bool> Child::Impl::probe() {
  upstream::Endpoint ep;
  ep.host = (opts_.host == "0.0.0.0" || opts_.host.empty()) ? "127.0.0.1" : opts_.host;
  ep.port = static_cast<std::uint16_t>(opts_.port);
  upstream::Request req;
  req.target = opts_.profile.health.path;
  req.timeout = milliseconds(opts_.profile.health.probe_timeout_ms);
  auto res = co_await upstream::fetch(strand_, ep, req);
  co_return res.ok() && res->status == opts_.profile.health.status;  // llama-server: 503 = still loading
}

asio::awaitable<ChildFailure> Child::Impl::exit_failure() {
  auto until = SClock::now() + kPipeDrainWait;
  while (open_pipes_ > 0 && SClock::now() < until) co_await sleep_until(until);
  co_return classify_exit(exit_code_, signal_, tail());
}

asio::awaitable<ChildFailure> Child::Impl::fail_start(FailureKind kind, std::string msg, std::string hint) {
  co_await stop();
  ChildFailure f;
  f.kind = kind;
  f.message = std::move(msg);
  f.hint = std::move(hint);
  f.exit_code = exit_code_;
  f.signal = signal_;
  f.log_tail = tail();
  co_return f;
}

asio::awaitable<StartOutcome> Child::Impl::start() {
  auto self = shared_from_this();
  const auto& h = opts_.profile.health;
  if (stop_requested_) {  // stop() ran first (a shutdown racing this start): spawn nothing
    ChildFailure f;
    f.kind = FailureKind::internal;
    f.message = "stopped before it started";
    co_return StartOutcome{std::nullopt, std::move(f)};
  }
  log_.open(opts_.log_dir, opts_.profile.name);
  auto spawned_at = SClock::now();
  last_line_at_ = spawned_at;
  if (auto f = spawn())
    co_return StartOutcome{std::nullopt, std::move(*f)};
  // glibc 2.36 declares pidfd_open without extern "C"; call the syscall directly.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<int>(pid_), 0));
  if (fd >= 0) pidfd_ = std::make_unique<asio::posix::stream_descriptor>(strand_, fd);
  open_pipes_ = 2;
  asio::co_spawn(strand_, read_lines(out_.get()), asio::detached);
  asio::co_spawn(strand_, read_lines(err_.get()), asio::detached);
  asio::co_spawn(strand_, watch_exit(), asio::detached);

  const auto deadline = spawned_at + std::chrono::seconds(h.startup_timeout_s);
  auto next_probe = spawned_at + milliseconds(h.first_probe_ms);
  bool probed_after_listening = false;
  for (;;) {
    if (reaped_) {
      auto f = co_await exit_failure();
      co_return StartOutcome{std::nullopt, std::move(f)};
    }
    auto now = SClock::now();
    // (Messages are built outside co_await: GCC 12 miscompiles array temporaries there.)
    if (now >= deadline) {
      std::string msg = "not healthy within " + std::to_string(h.startup_timeout_s) + " s (startup_timeout_s)";
      std::string hint = "raise health.startup_timeout_s, or check the log for a hang";
      auto f = co_await fail_start(FailureKind::startup_timeout, std::move(msg), std::move(hint));
      co_return StartOutcome{std::nullopt, std::move(f)};
    }
    if (now >= last_line_at_ + std::chrono::seconds(h.stall_timeout_s)) {
      std::string msg = "no output for " + std::to_string(h.stall_timeout_s) + " s while starting (stall_timeout_s)";
      std::string hint = "the server hangs while loading; check the log";
      auto f = co_await fail_start(FailureKind::stalled, std::move(msg), std::move(hint));
      co_return StartOutcome{std::nullopt, std::move(f)};
    }
    if (!h.ready_line.empty()) {  // a ready line instead of an HTTP probe (backend=command)
      if (listening_at_) break;
      co_await sleep_until(std::min(deadline, last_line_at_ + std::chrono::seconds(h.stall_timeout_s)));
      continue;
    }
    bool listening_now = listening_at_ && !probed_after_listening;
    if (now >= next_probe || listening_now) {
      probed_after_listening = probed_after_listening || listening_at_.has_value();
      if (co_await probe()) break;
      next_probe = SClock::now() + milliseconds(h.interval_ms);
      continue;
    }
    auto stall_at = last_line_at_ + std::chrono::seconds(h.stall_timeout_s);
    co_await sleep_until(std::min(std::min(next_probe, deadline), stall_at));
  }
  if (reaped_ || stop_requested_) {  // exited, or stop() ran meanwhile
    auto f = co_await exit_failure();
    co_return StartOutcome{std::nullopt, std::move(f)};
  }
  serving_ = true;
  auto ready_at = SClock::now();
  StartReport r;
  r.endpoint.host = opts_.host;
  r.endpoint.port = static_cast<std::uint16_t>(opts_.port);
  r.endpoint.api_key = opts_.api_key;
  r.pid = pid_;
  r.total_ms = ms_between(spawned_at, ready_at);
  r.spawn_to_listening_ms = ms_between(spawned_at, listening_at_.value_or(ready_at));
  r.detect_ms = listening_at_ ? ms_between(*listening_at_, ready_at) : 0;
  StartOutcome out;
  out.report = r;
  co_return out;
}

asio::awaitable<StopReport> Child::Impl::stop() {
  auto self = shared_from_this();
  StopReport rep;
  stop_requested_ = true;
  if (!reaped_) {
    auto t0 = SClock::now();
    co_await run_stop_command(rep);
    const auto& sig = opts_.profile.stop.signal;
    if (!reaped_) ::kill(-pid_, signal_number(sig));
    const auto t1 = SClock::now();
    auto grace = milliseconds(static_cast<std::int64_t>(opts_.profile.stop.grace_s * 1000));
    while (!reaped_ && SClock::now() < t1 + grace) co_await sleep_until(t1 + grace);
    if (!reaped_) {
      spdlog::warn("{}: still alive {:.1f} s after SIG{}, sending SIGKILL", opts_.profile.name,
                   opts_.profile.stop.grace_s, sig);
      ::kill(-pid_, SIGKILL);
      rep.killed = true;
      auto until = SClock::now() + kKillReapWait;
      while (!reaped_ && SClock::now() < until) co_await sleep_until(until);
    }
    rep.stop_ms = ms_between(t0, SClock::now());
  }
  rep.exit_code = exit_code_;
  rep.signal = signal_;
  logs_closed_ = true;
  drain_logs();
  boost::system::error_code ec;
  if (out_) out_->close(ec);
  if (err_) err_->close(ec);
  co_return rep;
}

// stop.command (backend=command), bounded by stop.timeout_s; the signal follows if the server lives on.
asio::awaitable<void> Child::Impl::run_stop_command(StopReport& rep) {
  const auto& st = opts_.profile.stop;
  if (st.command.empty() || !config::backend_of(opts_.profile).own_command) co_return;
  const config::SpawnArgs spawn{opts_.host, std::to_string(opts_.port), {}, {}};
  const auto timeout = milliseconds(static_cast<std::int64_t>(st.command_timeout_s * 1000));
  // Named first: GCC 12 mishandles temporaries passed inside a co_await expression.
  auto argv = config::build_stop_argv(opts_.profile, spawn, pid_);
  auto env = opts_.profile.env;
  auto r = co_await supervisor::run_stop_command(strand_, std::move(argv), std::move(env), timeout);
  rep.stop_command = r.describe();
  log_.line("[kevlaya] stop command: " + rep.stop_command);
  log_.write();
  if (!r.ran || r.timed_out || r.exit_code != 0)
    spdlog::warn("{}: stop command {}; sending SIG{}", opts_.profile.name, rep.stop_command, st.signal);
}

// Exited now, reported or not: WNOWAIT leaves the zombie for the exit watcher to reap.
bool Child::Impl::exited_now() const {
  if (reaped_) return true;
  const int pid = pid_;
  if (pid <= 0) return false;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == pid;
}

void Child::Impl::kill_and_reap_sync() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  if (!opts_.state_dir.empty()) remove_state(opts_.state_dir, record_);
}

std::shared_ptr<Child> Child::create(asio::io_context& ioc, ChildOptions opts) {
  return std::make_shared<Child>(std::make_shared<Impl>(ioc, std::move(opts)));
}

Child::~Child() {
  // The exit watcher keeps Impl alive until the process exits; make sure it does.
  if (!impl_->reaped_ && impl_->pid_ > 0) ::kill(-impl_->pid_, SIGKILL);
}

asio::awaitable<StartOutcome> Child::start() {
  co_return co_await asio::co_spawn(impl_->strand_, impl_->start(), asio::use_awaitable);
}

asio::awaitable<StopReport> Child::stop() {
  co_return co_await asio::co_spawn(impl_->strand_, impl_->stop(), asio::use_awaitable);
}

void Child::kill_now() {
  asio::post(impl_->strand_, [impl = impl_] {
    if (!impl->reaped_ && impl->pid_ > 0) ::kill(-impl->pid_, SIGKILL);
  });
}

void Child::on_unexpected_exit(std::function<void(ChildFailure)> cb) {
  asio::post(impl_->strand_, [impl = impl_, cb = std::move(cb)]() mutable { impl->on_exit_ = std::move(cb); });
}

int Child::pid() const { return impl_->pid_; }
bool Child::exited() const { return impl_->exited_now(); }
const ChildOptions& Child::options() const { return impl_->opts_; }

}  // namespace kevlaya::supervisor
