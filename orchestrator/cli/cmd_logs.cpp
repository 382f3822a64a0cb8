// `kevlaya-orch logs PROFILE [-f] [-n N] [--config F]`: print a child's captured log (stdout and
// stderr of its llama-server, written by the supervisor to log_dir/PROFILE.log and rotated by
// spdlog to PROFILE.1.log .. PROFILE.3.log). `-f` keeps printing what is appended, across rotations.
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <deque>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "common/fd.hpp"
#include "config/config.hpp"
#include "supervisor/child.hpp"

namespace kevlaya::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kRotatedFiles = 3;                    // supervisor/child.cpp keeps 3 rotated files
constexpr auto kFollowPoll = std::chrono::milliseconds(200);  // the longest wait between checks
constexpr std::size_t kReadChunk = 64 * 1024;

struct LogsArgs {
  std::string config;
  std::string profile;
  bool follow = false;
  int lines = 100;
};

// spdlog's rotated name: kev.log -> kev.1.log.
fs::path rotated(const fs::path& base, int i) {
  return base.parent_path() / (base.stem().string() + "." + std::to_string(i) + base.extension().string());
}

// Keeps the last `n` lines of everything fed to it.
class LastLines {
 public:
  explicit LastLines(std::size_t n) : n_(n) {}
  void feed(std::istream& in) {
    std::string line;
    while (n_ > 0 && std::getline(in, line)) {
      lines_.push_back(std::move(line));
      if (lines_.size() > n_) lines_.pop_front();
    }
  }
  void print(std::ostream& out) const {
    for (const auto& l : lines_) out << l << '\n';
  }

 private:
  std::size_t n_;
  std::deque<std::string> lines_;
};

// The file's identity, to notice that rotation replaced it.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};
std::optional<FileId> file_id(const fs::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// Copies what `in` has beyond its current position to stdout.
void drain(std::ifstream& in) {
  std::string buf(kReadChunk, '\0');
  in.clear();
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    std::cout.write(buf.data(), in.gcount());
    if (!in) break;
  }
  in.clear();
  std::cout.flush();
}

// Sleeps until something in `dir` changes (inotify: a write, a create, a rename), or kFollowPoll
// at most (also the whole wait when inotify is unavailable), so appended lines print at once.
class DirWatch {
 public:
  explicit DirWatch(const fs::path& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_.fd >= 0 && ::inotify_add_watch(fd_.fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM) < 0)
      fd_.reset();
  }
  void wait() {
    if (fd_.fd < 0) return std::this_thread::sleep_for(kFollowPoll);
    pollfd p{fd_.fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(kFollowPoll.count()));
    char events[4096];  // drained only: the events wake us, the file is checked either way
    while (::read(fd_.fd, events, sizeof events) > 0) continue;
  }

 private:
  UniqueFd fd_;
};

// Prints appended text until killed; on rotation finishes the old file, then reopens the new one.
[[noreturn]] void follow(const fs::path& base) {
  std::ifstream in(base, std::ios::binary | std::ios::ate);
  auto id = file_id(base);
  DirWatch watch(base.parent_path());
  for (;;) {
    drain(in);
    watch.wait();
    const auto now = file_id(base);
    if (now && (!id || !(*now == *id))) {
      drain(in);  // the renamed file: its last lines were written before the rotation
      in = std::ifstream(base, std::ios::binary);
      id = now;
    } else if (now && in.is_open()) {
      std::error_code ec;
      const auto size = fs::file_size(base, ec);
      in.clear();
      if (!ec && static_cast<std::uintmax_t>(in.tellg()) > size) in.seekg(0);  // truncated in place
    }
  }
}

// The profile's canonical name, or empty after printing why not.
std::string find_profile(const config::Config& c, const std::string& name) {
  const auto* p = c.find_profile(name);
  if (!p) {
    std::cerr << "kevlaya-orch logs: unknown profile '" << name << "'; profiles:";
    for (const auto& q : c.profiles) std::cerr << ' ' << q.name;
    std::cerr << '\n';
    return {};
  }
  // Names are validated by the loader; refuse anything that could leave log_dir regardless.
  if (p->name.find('/') != std::string::npos || p->name.find('\0') != std::string::npos ||
      p->name == "." || p->name == "..") {
    std::cerr << "kevlaya-orch logs: profile name '" << p->name << "' is not a file name\n";
    return {};
  }
  return p->name;
}

int run_logs(const LogsArgs& a) {
  auto loaded = config::load(!a.config.empty()             ? fs::path(a.config)
                             : fs::exists("kevlaya.yaml") ? fs::path("kevlaya.yaml")
                                                          : fs::path());
  for (const auto& d : loaded.diagnostics) std::cerr << d.format() << '\n';
  if (!loaded.ok()) return kExitFailure;
  const std::string name = find_profile(loaded.config, a.profile);
  if (name.empty()) return kExitFailure;
  const fs::path base = supervisor::child_log_path(loaded.config.orch.log_dir, name);
  if (!fs::is_regular_file(base)) {
    std::cerr << "kevlaya-orch logs: no log for '" << name << "' (" << base.string()
              << " does not exist)\n  hint: the log is written once the profile has been started "
                 "(serve, up, run) with this log_dir\n";
    return kExitFailure;
  }
  LastLines last(static_cast<std::size_t>(a.lines));
  for (int i = kRotatedFiles; i >= 1; --i) {
    std::ifstream old(rotated(base, i), std::ios::binary);
    if (old) last.feed(old);
  }
  std::ifstream cur(base, std::ios::binary);
  last.feed(cur);
  last.print(std::cout);
  std::cout.flush();
  if (a.follow) follow(base);
  return kExitOk;
}

}  // namespace

void add_logs(CLI::App& app, Globals& g) {
  auto args = std::make_shared<LogsArgs>();
  auto* sub = app.add_subcommand("logs", "print a child's captured llama-server log");
  sub->add_option("profile", args->profile, "profile name or alias")->required();
  sub->add_flag("-f,--follow", args->follow, "keep printing new lines (across log rotations)");
  sub->add_option("-n,--lines", args->lines, "print the last N lines first (default 100)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--config", args->config, "kevlaya.yaml (default: ./kevlaya.yaml if present)");
  sub->callback([&g, args] { g.exit_code = run_logs(*args); });
}

}  // namespace kevlaya::cli
