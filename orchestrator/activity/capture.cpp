#include "activity/capture.hpp"

#include "common/credentials.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <system_error>

namespace kevlaya::activity {
namespace {

using nlohmann::json;

// Level 1 with a 64 KiB window: about 0.5 MiB of context per call in flight, several hundred
// MB/s, and text bodies still shrink many times.
constexpr int kLevel = 1;
constexpr int kWindowLog = 16;  // capture_read.cpp refuses a larger one
// Input is compressed a slice at a time, the caps checked between slices: a capture passes its
// cap by at most one slice and the block zstd was holding.
constexpr std::size_t kSlice = 32 * 1024;
constexpr std::size_t kOut = 16 * 1024;  // on the stack: a writer keeps no output buffer

json headers_json(const HeaderPairs& h) {
  json a = json::array();
  for (const auto& [k, v] : h) a.push_back({k, v});
  return a;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void remove_file(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

// What a previous run left (captures do not outlive the door), then a private folder for ours.
bool prepare_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) return false;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".zst") remove_file(it->path());
  return true;
}

}  // namespace

HeaderPairs redact(HeaderPairs headers) {
  for (auto& [k, v] : headers)
    if (is_credential_header(k)) v = "[redacted]";
  return headers;
}

// ---- CaptureWriter --------------------------------------------------------------------------

CaptureWriter::CaptureWriter(CaptureRing& ring, int fd, std::filesystem::path file)
    : ring_(ring), cctx_(ZSTD_createCCtx()), fd_(fd), file_(std::move(file)) {
  if (!cctx_) return;
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, kLevel);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kWindowLog);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);  // a damaged file reads as damaged
}

CaptureWriter::~CaptureWriter() {
  ZSTD_freeCCtx(cctx_);
  if (fd_ >= 0) ::close(fd_);
  if (finished_) return;
  ring_.refund(produced_);
  if (!file_.empty()) remove_file(file_);
}

std::size_t CaptureWriter::memory() const { return cctx_ ? ZSTD_sizeof_CCtx(cctx_) : 0; }

void CaptureWriter::request(std::string_view bytes) {
  if (response_len_ == 0) feed(bytes, request_len_);
  else if (!bytes.empty()) truncated_ = true;  // out of order: the stream holds the request first
}

void CaptureWriter::response(std::string_view bytes) { feed(bytes, response_len_); }

void CaptureWriter::feed(std::string_view bytes, std::uint64_t& counter) {
  if (bytes.empty() || finished_) return;
  const std::uint64_t room = CaptureRing::kMaxRawBytes - raw();
  if (bytes.size() > room) bytes = bytes.substr(0, static_cast<std::size_t>(room));
  while (!bytes.empty() && !stopped_) {
    const auto slice = bytes.substr(0, kSlice);
    const bool go_on = compress(slice, false);
    if (!failed_) counter += slice.size();  // compressed: it is in the frame
    bytes.remove_prefix(slice.size());
    if (!go_on || produced_ >= ring_.max_capture_bytes() || raw() >= CaptureRing::kMaxRawBytes) stopped_ = true;
  }
  if (!bytes.empty()) truncated_ = true;
}

bool CaptureWriter::compress(std::string_view in, bool end) {
  if (!cctx_ || failed_) return false;
  char out[kOut];
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  bool within = true;
  for (;;) {
    ZSTD_outBuffer dst{out, sizeof out, 0};
    const std::size_t left = ZSTD_compressStream2(cctx_, &dst, &src, end ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(left)) {
      failed_ = true;
      return false;
    }
    if (dst.pos > 0 && !store(out, dst.pos)) within = false;
    if (failed_) return false;
    if (end ? left == 0 : src.pos == src.size) break;
  }
  return within;
}

// Keeps `n` compressed bytes (the stream needs them whole); false once the ring is over budget
// or the write failed.
bool CaptureWriter::store(const char* data, std::size_t n) {
  std::size_t done = 0;
  if (fd_ < 0) {
    ram_.append(data, n);
    done = n;
  }
  while (fd_ >= 0 && done < n) {
    const ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // a full disk: the frame has a hole, it is not kept
    done += static_cast<std::size_t>(w);
  }
  if (done < n) failed_ = true;
  produced_ += done;
  return ring_.charge(done) && !failed_;
}

// ---- CaptureRing ----------------------------------------------------------------------------

CaptureRing::CaptureRing(std::size_t max_bytes, std::filesystem::path dir) : max_bytes_(max_bytes), dir_(std::move(dir)) {
  if (!dir_.empty() && !prepare_dir(dir_)) dir_.clear();  // no folder to write: RAM, within the same budget
}

CaptureRing::~CaptureRing() {
  for (const auto& [id, k] : kept_)
    if (!k.file.empty()) remove_file(k.file);
}

bool CaptureRing::charge(std::size_t n) {
  bytes_ += n;
  while (bytes_ > max_bytes_ && !order_.empty()) drop_oldest();
  return bytes_ <= max_bytes_;
}

void CaptureRing::drop_oldest() {
  const auto it = kept_.find(order_.front());
  order_.pop_front();
  if (it == kept_.end()) return;
  bytes_ -= it->second.bytes;
  if (!it->second.file.empty()) remove_file(it->second.file);  // an open reader keeps its copy
  kept_.erase(it);
}

std::unique_ptr<CaptureWriter> CaptureRing::start() {
  int fd = -1;
  std::filesystem::path file;
  if (!dir_.empty()) {
    file = dir_ / (std::to_string(next_file_++) + ".zst");
    fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return nullptr;
  }
  std::unique_ptr<CaptureWriter> w(new CaptureWriter(*this, fd, std::move(file)));
  if (!w->cctx_) return nullptr;
  return w;
}

bool CaptureRing::finish(std::unique_ptr<CaptureWriter> w, CaptureInfo info) {
  if (!w) return false;
  w->compress({}, true);  // the frame's end, whatever the budget says
  w->finished_ = true;
  Kept k;
  k.request_len = w->request_len_;
  k.response_len = w->response_len_;
  json head = {{"id", info.id}, {"at_ms", info.at_ms}, {"model", info.model}, {"endpoint", info.endpoint},
               {"method", info.method}, {"truncated", w->truncated_}};
  k.prefix = dump(head);
  k.prefix.pop_back();  // the object goes on
  k.prefix += ",\"request\":{\"headers\":" + dump(headers_json(redact(std::move(info.request_headers)))) + ",\"body\":\"";
  k.middle = "\"},\"response\":{\"status\":" + std::to_string(info.status) + ",\"body\":\"";
  k.bytes = w->produced_ + k.prefix.size() + k.middle.size() + info.id.size();
  const bool ok = !w->failed_ && k.bytes <= max_bytes_ && !kept_.contains(info.id);
  if (!ok) {
    refund(w->produced_);
    if (!w->file_.empty()) remove_file(w->file_);
    return false;
  }
  charge(k.bytes - w->produced_);  // its frame is charged already
  if (w->fd_ < 0) k.ram = std::make_shared<const std::string>(std::move(w->ram_));
  k.file = w->file_;
  order_.push_back(info.id);
  kept_.emplace(std::move(info.id), std::move(k));
  return true;
}

bool CaptureRing::add(Capture c) {
  auto w = start();
  if (!w) return false;
  w->request(c.request_body);
  w->response(c.response_body);
  return finish(std::move(w), std::move(static_cast<CaptureInfo&>(c)));
}

}  // namespace kevlaya::activity
