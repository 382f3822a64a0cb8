#include "supervisor/state_file.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/bytes.hpp"

namespace kevlaya::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr auto kGoneWait = std::chrono::milliseconds(2000);
constexpr auto kGonePoll = std::chrono::milliseconds(10);

fs::path file_for(const fs::path& dir, const ChildRecord& rec) {
  return dir / (rec.profile + "-" + std::to_string(rec.pid) + ".json");
}

// Fields of /proc/PID/stat after the "(comm)" part; empty when absent.
std::vector<std::string> stat_fields(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(s.substr(close + 1));
  std::vector<std::string> out;
  for (std::string f; rest >> f;) out.push_back(f);
  return out;  // out[0] = state (field 3), out[19] = starttime (field 22)
}

bool gone_or_zombie(int pid) {
  auto f = stat_fields(pid);
  return f.empty() || f[0] == "Z" || f[0] == "X";
}

}  // namespace

unsigned long long proc_start_time(int pid) {
  auto f = stat_fields(pid);
  return f.size() > 19 ? std::stoull(f[19]) : 0;
}

std::vector<std::string> proc_cmdline(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool write_state(const fs::path& dir, const ChildRecord& rec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  json argv = json::array();  // paths are bytes: each element round-trips (common/bytes.hpp)
  for (const auto& a : rec.argv) argv.push_back(bytes_to_json(a));
  json j = {{"pid", rec.pid},       {"pgid", rec.pgid}, {"start_time", rec.start_time},
            {"profile", bytes_to_json(rec.profile)}, {"argv", argv}};
  auto path = file_for(dir, rec);
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << dump_json(j) << "\n";
    if (!out) return false;
  }
  fs::rename(tmp, path, ec);
  return !ec;
}

void remove_state(const fs::path& dir, const ChildRecord& rec) {
  std::error_code ec;
  fs::remove(file_for(dir, rec), ec);
}

namespace {

bool kill_if_ours(const ChildRecord& rec) {
  if (rec.pid <= 1 || rec.pgid <= 1) return false;
  // A reused pid runs something else or started at another time: leave it alone.
  if (proc_cmdline(rec.pid) != rec.argv || proc_start_time(rec.pid) != rec.start_time) return false;
  spdlog::warn("killing leftover child of a previous run: profile {} pid {}", rec.profile, rec.pid);
  ::kill(-rec.pgid, SIGKILL);
  auto until = std::chrono::steady_clock::now() + kGoneWait;
  while (!gone_or_zombie(rec.pid) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(kGonePoll);  // not our child: no exit event to await
  return true;
}

}  // namespace

int reap_stale(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int killed = 0;
  for (const auto& ent : fs::directory_iterator(dir, ec)) {
    if (ent.path().extension() != ".json") continue;
    std::ifstream in(ent.path());
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      ChildRecord rec;
      rec.pid = j.value("pid", 0);
      rec.pgid = j.value("pgid", 0);
      rec.start_time = j.value("start_time", 0ULL);
      rec.profile = bytes_from_json(j.value("profile", json())).value_or("");
      for (const auto& a : j.value("argv", json::array())) rec.argv.push_back(bytes_from_json(a).value_or(""));
      if (kill_if_ours(rec)) ++killed;
    }
    fs::remove(ent.path(), ec);
  }
  return killed;
}

}  // namespace kevlaya::supervisor
