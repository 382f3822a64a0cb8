#include "pipeline/journal.hpp"

#include "common/bounded_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace kevlaya::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Error io_error(const fs::path& p, const std::string& what, int err) {
  return make_error(Errc::io_error, "journal " + p.string() + ": " + what + ": " + std::strerror(err));
}

// Makes the new file's directory entry durable too (fsync on the file alone does not).
void fsync_dir(const fs::path& file) {
  const auto dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd >= 0) ::fsync(dfd.fd);
}

// What append() writes: an object naming its task.
bool is_record(const json& j) { return j.is_object() && j.contains("id") && j["id"].is_string(); }

struct ReadBack {
  std::vector<json> records;
  std::uint64_t good_bytes = 0;  // length of the prefix made of complete, valid lines
  bool torn = false;
};

Result<ReadBack> read_back(const fs::path& path, const std::string& data) {
  ReadBack rb;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < data.size()) {
    ++line_no;
    const auto nl = data.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 == data.size();
    const auto line = std::string_view(data).substr(pos, (nl == std::string::npos ? data.size() : nl) - pos);
    if (line.empty() && nl != std::string::npos) {  // a blank line carries nothing
      pos = nl + 1;
      rb.good_bytes = pos;
      continue;
    }
    auto parsed = parse_json_bounded(line);  // depth-limited like every JSON from outside
    const std::string at = "journal " + path.string() + ": line " + std::to_string(line_no);
    // Valid JSON that is not a record cannot be a torn record (a prefix of an object never parses).
    if (parsed && !is_record(*parsed))
      return make_error(Errc::io_error, at + " is not a journal record (" + std::string(parsed->type_name()) +
                                            "; expected an object with a string \"id\")",
                        "move the file away or remove that line; nothing was changed");
    // A complete line that nests too deep is an error wherever it is: it is not torn.
    const bool too_deep = !parsed && parsed.error().message == json_depth_message();
    if (nl == std::string::npos || !parsed) {
      if (!last || too_deep)
        return make_error(Errc::io_error, at + " is corrupt" + (parsed ? "" : ": " + parsed.error().message),
                          "move the file away or repair that line");
      rb.torn = true;  // the crash happened while this line was being written
      break;
    }
    rb.records.push_back(std::move(parsed.value()));
    pos = nl + 1;
    rb.good_bytes = pos;
  }
  return rb;
}

}  // namespace

Result<Journal> Journal::open(const fs::path& path, Mode mode) {
  Journal j;
  j.path_ = path;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (mode == Mode::create && exists && fs::file_size(path, ec) > 0)
    return make_error(Errc::config_invalid, "journal " + path.string() + " already has records",
                      "pass --resume to continue that run, or choose another journal path");
  if (mode == Mode::resume && exists) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return io_error(path, "cannot read", errno);
    std::stringstream ss;
    ss << in.rdbuf();
    auto rb = read_back(path, ss.str());
    if (!rb) return rb.error();
    if (rb->torn && ::truncate(path.c_str(), static_cast<off_t>(rb->good_bytes)) != 0)
      return io_error(path, "cannot cut the torn last line", errno);
    j.dropped_torn_ = rb->torn;
    for (auto& r : rb->records) j.note(r);
    j.existing_ = std::move(rb->records);
  }
  if (!path.parent_path().empty()) fs::create_directories(path.parent_path(), ec);
  j.fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (j.fd_.fd < 0) return io_error(path, "cannot open for appending", errno);
  if (!exists) fsync_dir(path);
  return j;
}

void Journal::note(const json& record) {
  if (!record.contains("id") || !record["id"].is_string()) return;
  const auto id = record["id"].get<std::string>();
  const auto verdict = record.value("verdict", std::string());
  if (verdict == "accepted" || verdict == "rejected") completed_.insert(id);
  else completed_.erase(id);  // a later error record means the task must run again
}

Status Journal::append(const json& record) {
  // Raw model text may be invalid UTF-8; replace rather than throw.
  const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  struct stat st {};
  if (::fstat(fd_.fd, &st) != 0) return io_error(path_, "fstat", errno);
  std::size_t done = 0;
  while (done < line.size()) {
    const auto n = ::write(fd_.fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      if (::ftruncate(fd_.fd, st.st_size) != 0) { /* the torn line is dropped on resume anyway */ }
      return io_error(path_, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_.fd) != 0) return io_error(path_, "fsync", errno);
  note(record);
  return ok_status();
}

}  // namespace kevlaya::pipeline
