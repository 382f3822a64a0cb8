// A child's log file, log_dir/<profile>.log (rotated: 3 files of 5 MiB): every line the child
// printed, as "2026-01-01T00:00:00.000 [kev] text". Lines are queued with one time stamp per
// batch (the lines a read brought) and reach the sink as one message (one per 64 KiB), flushed at
// the batch's end: a real server prints dozens of lines per request, and spdlog's layout of each
// line was a tenth of the door's instructions per request. Used on the child's strand only.
#pragma once
#include <boost/circular_buffer.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}

namespace kevlaya::supervisor {

// Path of the rotating log file of a profile in `log_dir`.
std::filesystem::path child_log_path(const std::filesystem::path& log_dir, const std::string& profile);

class ChildLog {
 public:
  // Opens (creating) the profile's file in `log_dir`; a failure is logged and its lines go nowhere.
  void open(const std::filesystem::path& log_dir, const std::string& profile);
  void line(std::string_view text);  // queued; the first of a batch takes the time stamp
  void write();                      // the batch's lines, to the file, flushed; the batch ends

 private:
  void emit();  // the queued lines to the sink, as one message
  std::shared_ptr<spdlog::logger> log_;  // null: not open
  std::string name_;
  std::string pending_;  // queued lines, each with its prefix and newline
  std::string prefix_;   // the batch's "stamp [name] "; empty between batches
};

// The last `capacity` lines of a child, for error reports: a ring whose strings keep their room (a
// real server prints dozens of lines per request: no allocation per line once it is full).
class LineRing {
 public:
  explicit LineRing(std::size_t capacity) : ring_(capacity) {}
  std::string& next();                    // the slot of a new line (the oldest line's, once full)
  std::vector<std::string> lines() const { return {ring_.begin(), ring_.end()}; }  // oldest first

 private:
  boost::circular_buffer<std::string> ring_;
  std::string scratch_;  // the slot when the capacity is 0
};

}  // namespace kevlaya::supervisor
