// Children inherit only stdin, stdout and stderr (docs/security.md, "Descriptors"): no child of a
// running door holds the door's listener, its clients' or pooled connections, another child's
// pipes or a log file, whatever the backend (llama-server, the stand-in, a `command`), after
// switches, beside co-resident children and after a restart; and the consequences of a leak: a
// `Connection: close` answer ends with FIN while the child lives, a `command` child holds no
// listening socket, and an orphaned grandchild does not keep the door's port.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fd.hpp"
#include "harness.hpp"
#include "support/models.hpp"

using namespace kevlaya::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Run as a `command` child before the stand-in: counts the listening sockets it inherited (each
// one a door's listener it could accept() on), writes "listeners: N" to argv[1], execs argv[2:].
constexpr const char* kProbe = R"(import os, socket, sys
listeners = 0
for name in os.listdir('/proc/self/fd'):
    if int(name) < 3:
        continue
    try:
        s = socket.socket(fileno=int(name))
    except OSError:
        continue
    try:
        listeners += s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError:
        pass
    s.detach()
with open(sys.argv[1], 'w') as f:
    f.write('listeners: %d\n' % listeners)
os.execv(sys.argv[2], sys.argv[2:])
)";

constexpr const char* kPython = "/usr/bin/python3";

std::map<int, std::string> fd_targets(pid_t pid) {
  std::map<int, std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto target = fs::read_symlink(it->path(), ec);
    if (!ec) out[std::stoi(it->path().filename().string())] = target.string();
    ec.clear();
  }
  return out;
}

bool has_prefix(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// What the door holds that no child may: its sockets and pipes, and its files under `dir`.
std::set<std::string> door_owned(pid_t door, const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& [fd, target] : fd_targets(door))
    if (has_prefix(target, "socket:[") || has_prefix(target, "pipe:[") || has_prefix(target, dir.string()))
      out.insert(target);
  return out;
}

// The child's descriptors above stderr that are the door's, as "fd -> target".
std::vector<std::string> shared_with_door(pid_t door, pid_t child, const fs::path& dir) {
  const auto owned = door_owned(door, dir);
  std::vector<std::string> out;
  for (const auto& [fd, target] : fd_targets(child))
    if (fd >= 3 && owned.count(target)) out.push_back(std::to_string(fd) + " -> " + target);
  return out;
}

std::string chat_request(const std::string& model) {
  const std::string body = R"({"model":")" + model + R"(","max_tokens":4,"messages":[{"role":"user","content":"Once"}]})";
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string fast_yaml() {
  return "health: {first_probe_ms: 10, interval_ms: 20}\nstop: {grace_s: 1}\n"
         "restart: {backoff_initial_ms: 20, backoff_max_s: 1}\n";
}

// kev and laya on `binary`, and cmd (backend: command: the stand-in behind the probe).
void write_isolation_config(const TempDir& dir, const std::string& binary, const std::string& residency) {
  const std::string model = tiny_llama().string();
  for (const std::string name : {"kev", "laya"})
    write_text(dir / ("profiles/" + name + ".yaml"), "name: " + name + "\nbinary: " + binary + "\nmodel: " + model +
                                                        "\nngl: 0\nctx: 256\nshared_base: false\n" + fast_yaml());
  write_text(dir / "probe.py", kProbe);
  write_text(dir / "profiles/cmd.yaml",
             "name: cmd\nbackend: command\nmodel: " + model + "\nctx: 256\nparallel: 1\nvram_mib: 64\ncommand: [" +
                 kPython + ", " + (dir / "probe.py").string() + ", " + (dir / "cmd-fds.txt").string() + ", " +
                 standin_binary().string() +
                 ", -m, '{model}', --host, '{host}', --port, '{port}', -c, '{ctx}', -np, '{parallel}', --alias, '{name}']\n" +
                 fast_yaml());
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n"
                                   "residency: " + residency + "\ngpu: {vram_mib: 65536}\n"
                                   "scheduling: {min_residency_ms: 0, max_wait_before_swap_ms: 0}\n");
}

// Pids of the children /status shows running, by profile.
std::map<std::string, int> running_children(int port) {
  std::map<std::string, int> out;
  const auto st = json::parse(http_get(port, "/status").body, nullptr, false);
  if (st.is_discarded()) return out;
  for (const auto& p : st.value("profiles", json::array()))
    if (p.value("pid", 0) > 0) out[p.value("name", "")] = p.value("pid", 0);
  return out;
}

// No running child shares a descriptor with the door.
void check_children(Serve& serve, const TempDir& dir) {
  const auto owned = door_owned(serve.proc().pid(), dir.path());
  // The check can see a leak: the door holds its listener, the held client and a child's log file.
  CHECK(std::count_if(owned.begin(), owned.end(), [](const auto& t) { return has_prefix(t, "socket:["); }) >= 2);
  CHECK(std::any_of(owned.begin(), owned.end(), [&](const auto& t) { return has_prefix(t, (dir / "logs").string()); }));
  const auto children = running_children(serve.port());
  CHECK_FALSE(children.empty());
  for (const auto& [name, pid] : children) {
    INFO(name << " (pid " << pid << ") holds the door's descriptors");
    CHECK(shared_with_door(serve.proc().pid(), pid, dir.path()) == std::vector<std::string>{});
  }
}

// A cold-start answer with `Connection: close` ends with FIN while the child lives (a child holding
// the accepted socket kept it open for the child's whole life); then no child holds anything.
void call_and_check(Serve& serve, const TempDir& dir, const std::string& model) {
  const auto r = http_raw(serve.port(), chat_request(model), 60s, 5s);
  INFO(model << ": " << r.body << serve.proc().log());
  CHECK(r.status == 200);
  CHECK(r.closed);
  CHECK(running_children(serve.port()).count(model) == 1);
  check_children(serve, dir);
}

void inherit_nothing(const std::string& binary, const std::string& residency) {
  if (::access(kPython, X_OK) != 0) KEVLAYA_SKIP("the command child's probe needs " << kPython);
  TempDir dir("inherit-nothing");
  write_isolation_config(dir, binary, residency);
  Serve serve(dir / "kevlaya.yaml");
  // A client connection open while every child starts (kept alive: the door keeps its socket).
  const int held = connect_loopback(serve.port());
  REQUIRE(held >= 0);
  const std::string ping = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::send(held, ping.data(), ping.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(ping.size()));
  for (const std::string model : {"kev", "laya", "cmd"}) call_and_check(serve, dir, model);
  CHECK(read_text(dir / "cmd-fds.txt") == "listeners: 0\n");
  // A restart: kev's child is killed; the next call starts a new one.
  const int first = running_children(serve.port()).count("kev") ? running_children(serve.port())["kev"] : 0;
  if (first > 0) ::kill(first, SIGKILL);
  CHECK(eventually([&] {
    const auto kids = running_children(serve.port());
    return kids.count("kev") == 0 || kids.at("kev") != first;
  }, 30s));
  call_and_check(serve, dir, "kev");
  CHECK(running_children(serve.port())["kev"] != first);
  ::close(held);
  CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
}

}  // namespace

TEST_CASE("children inherit nothing of the door: stand-in and command children, co-resident, after a restart",
          "[reliability][security]") {
  inherit_nothing(standin_binary().string(), "co-resident");
}

TEST_CASE("children inherit nothing of the door: stand-in and command children after switches",
          "[reliability][security]") {
  inherit_nothing(standin_binary().string(), "rotate");
}

TEST_CASE("children inherit nothing of the door: real llama-server, co-resident, after a restart",
          "[reliability][security][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  inherit_nothing(real, "co-resident");
}

TEST_CASE("children inherit nothing of the door: real llama-server after switches", "[reliability][security][real]") {
  KEVLAYA_REAL_SERVER_OR_SKIP(real);
  inherit_nothing(real, "rotate");
}

// An orphaned grandchild (`setsid sleep`, out of the child's process group, so stopping the child
// leaves it) held the door's listener: a new `serve` on the same port failed with "Address already
// in use" for as long as it lived.
TEST_CASE("an orphaned grandchild of a command child does not keep the door's port", "[reliability][security]") {
  TempDir dir("orphan-port");
  const std::string model = tiny_llama().string();
  write_text(dir / "profiles/cmd.yaml",
             "name: cmd\nbackend: command\nmodel: " + model + "\nctx: 256\nparallel: 1\nvram_mib: 64\n"
             "command: [/bin/sh, -c, 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > " +
                 (dir / "orphan.pid").string() + "; exec \"$0\" \"$@\"', " + standin_binary().string() +
                 ", -m, '{model}', --host, '{host}', --port, '{port}', -c, '{ctx}', -np, '{parallel}']\n" + fast_yaml());
  write_text(dir / "pipelines/.keep", "");
  write_text(dir / "kevlaya.yaml", "profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n");
  struct KillOrphan {
    fs::path file;
    ~KillOrphan() {
      std::error_code ec;
      if (fs::exists(file, ec)) ::kill(std::stoi(read_text(file)), SIGKILL);
    }
  } orphan{dir / "orphan.pid"};
  int port = 0;
  {
    Serve serve(dir / "kevlaya.yaml");
    port = serve.port();
    CHECK(http_raw(port, chat_request("cmd"), 60s).status == 200);
    REQUIRE(eventually([&] { return fs::exists(dir / "orphan.pid") && !read_text(dir / "orphan.pid").empty(); }));
    CHECK(serve.proc().signal_and_wait(SIGTERM) == 0);
  }
  const int sleeper = std::stoi(read_text(dir / "orphan.pid"));
  REQUIRE(::kill(sleeper, 0) == 0);  // the grandchild outlived the door
  Proc again({orch_binary().string(), "serve", (dir / "kevlaya.yaml").string(), "--port", std::to_string(port)},
             dir / "again.log");
  INFO(again.log());
  CHECK_FALSE(again.wait_for(std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)")).empty());
  CHECK(again.signal_and_wait(SIGTERM) == 0);
}

namespace {

// In a forked child: opens a pipe without O_CLOEXEC, runs `mark`, exits 0 when both ends (and no
// descriptor below 3) came out close-on-exec.
bool marks_all(void (*mark)()) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int p[2];
    if (::pipe(p) != 0) ::_exit(2);
    const int high = ::fcntl(p[0], F_DUPFD, 200);  // a hole below it, as in a real door
    mark();
    const bool marked = (::fcntl(p[0], F_GETFD) & FD_CLOEXEC) && (::fcntl(p[1], F_GETFD) & FD_CLOEXEC) &&
                        (::fcntl(high, F_GETFD) & FD_CLOEXEC);
    const bool stdio_kept = !(::fcntl(2, F_GETFD) & FD_CLOEXEC);
    ::_exit(marked && stdio_kept ? 0 : 1);
  }
  int status = -1;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("cloexec_above_stdio and its fallbacks mark every descriptor above stderr close-on-exec",
          "[reliability][security]") {
  CHECK(marks_all([] { kevlaya::cloexec_above_stdio(); }));
  CHECK(marks_all([] { (void)kevlaya::detail::cloexec_listed_fds(); }));
  CHECK(marks_all([] { kevlaya::detail::cloexec_up_to_limit(); }));
}
