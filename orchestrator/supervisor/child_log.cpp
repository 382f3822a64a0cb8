#include "supervisor/child_log.hpp"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/fd.hpp"

namespace kevlaya::supervisor {
namespace {
constexpr std::size_t kLogFileBytes = 5 * 1024 * 1024;
constexpr std::size_t kLogFiles = 3;
// Queued lines go to the sink once they reach this much (flushed only at the batch's end): a batch
// may hold 4 MiB of a chatty child's output, the queue holds at most this plus one line.
constexpr std::size_t kMaxPending = 64 * 1024;
}  // namespace

std::filesystem::path child_log_path(const std::filesystem::path& log_dir, const std::string& profile) {
  return log_dir / (profile + ".log");
}

void ChildLog::open(const std::filesystem::path& log_dir, const std::string& profile) {
  if (log_dir.empty()) return;
  name_ = profile;
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  spdlog::file_event_handlers on_open;  // spdlog's fopen has no "e": no child may get the file
  on_open.after_open = [](const spdlog::filename_t&, std::FILE* f) { set_cloexec(::fileno(f)); };
  try {
    auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_st>(child_log_path(log_dir, profile).string(),
                                                                        kLogFileBytes, kLogFiles, false, on_open);
    log_ = std::make_shared<spdlog::logger>(profile, sink);
    log_->set_pattern("%v");  // the lines come laid out (line())
    log_->flush_on(spdlog::level::off);
  } catch (const spdlog::spdlog_ex& e) {
    spdlog::warn("{}: cannot open log file: {}", profile, e.what());
  }
}

void ChildLog::line(std::string_view text) {
  if (!log_) return;
  if (prefix_.empty()) {  // the batch's first line; local time, as spdlog's own stamps
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char stamp[48];
    const auto n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(stamp + n, sizeof stamp - n, ".%03d", static_cast<int>(ms));
    prefix_.assign(stamp).append(" [").append(name_).append("] ");
  }
  pending_.append(prefix_).append(text).push_back('\n');
  if (pending_.size() >= kMaxPending) emit();
}

void ChildLog::emit() {
  if (pending_.empty()) return;
  pending_.pop_back();  // the sink ends the message with its own newline
  log_->log(spdlog::level::info, spdlog::string_view_t(pending_.data(), pending_.size()));
  pending_.clear();
}

void ChildLog::write() {
  if (!log_ || prefix_.empty()) return;
  emit();
  log_->flush();  // the batch is in the file before the next wait
  prefix_.clear();
}

std::string& LineRing::next() {
  if (ring_.capacity() == 0) return scratch_;
  if (!ring_.full()) {
    ring_.push_back();
    return ring_.back();
  }
  ring_.rotate(ring_.begin() + 1);  // constant time when full: the oldest slot becomes the newest
  return ring_.back();
}

}  // namespace kevlaya::supervisor
