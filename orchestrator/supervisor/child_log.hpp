// A child's log file, log_dir/<profile>.log (rotated: 3 files of 5 MiB): every line the child
// printed, as "2026-01-01T00:00:00.000 [kev] text". Lines are queued with one time stamp per
// batch (the lines a read brought) and written as one message, flushed: a real server prints
// several lines per request, and spdlog's layout of each line was a tenth of the door's
// instructions per request. Used on the child's strand only.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

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
  void write();                      // what is queued, to the file, flushed

 private:
  std::shared_ptr<spdlog::logger> log_;  // null: not open
  std::string name_;
  std::string pending_;  // queued lines, each with its prefix and newline
  std::string prefix_;   // the pending batch's "stamp [name] "
};

}  // namespace kevlaya::supervisor
