// Reading a capture back (CaptureReader): its frame is decompressed 64 KiB at a time and each
// piece escaped as JSON string content, so neither the JSON nor the bodies are ever whole in RAM.
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "activity/capture.hpp"
#include "common/bytes.hpp"
#include "common/fd.hpp"

namespace kevlaya::activity {
namespace {

constexpr std::size_t kRaw = 64 * 1024;  // decompressed bytes per piece
constexpr std::size_t kIn = 32 * 1024;   // compressed bytes per read
constexpr int kWindowLogMax = 16;        // what CaptureWriter writes: a larger window is refused

// Appends `in` as JSON string content: quote, backslash and control characters escaped, invalid
// UTF-8 replaced by U+FFFD. Returns how many bytes it took: all of them when `last`, else it
// stops before a sequence the next bytes may complete.
std::size_t escape_json(std::string_view in, bool last, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  std::size_t i = 0;
  while (i < n) {
    std::size_t run = i;  // plain ASCII goes out as it is, a run at a time
    while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') ++run;
    out.append(in.data() + i, run - i);
    i = run;
    if (i == n) break;
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: out += "\\u00", out += kHex[c >> 4], out += kHex[c & 0xF];
      }
      ++i;
    } else {
      const int len = utf8_seq_len_or_cut(in, i);
      if (len < 0 && !last) break;  // the rest of it comes with the next piece
      if (len > 0) {
        out.append(in.data() + i, static_cast<std::size_t>(len));
        i += static_cast<std::size_t>(len);
      } else {
        out += "\xEF\xBF\xBD";  // U+FFFD for the byte that starts no valid sequence
        ++i;
      }
    }
  }
  return i;
}

}  // namespace

// Where the frame is read from: the kept string (RAM) or the file opened when the reader was
// made (a capture dropped meanwhile stays readable through it).
struct CaptureReader::Source {
  std::shared_ptr<const std::string> ram;
  UniqueFd fd;
  std::uint64_t offset = 0;
  // Up to `n` more bytes of the frame into `out`; -1 when the file cannot be read.
  long read(char* out, std::size_t n) {
    if (ram) {
      const std::size_t k = offset >= ram->size() ? 0 : std::min(n, ram->size() - static_cast<std::size_t>(offset));
      std::copy_n(ram->data() + offset, k, out);
      offset += k;
      return static_cast<long>(k);
    }
    for (;;) {
      const ssize_t r = ::pread(fd.fd, out, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) offset += static_cast<std::uint64_t>(r);
      return static_cast<long>(r);
    }
  }
};

CaptureReader::CaptureReader(std::unique_ptr<Source> src, std::string prefix, std::string middle,
                             std::uint64_t request_len, std::uint64_t response_len)
    : src_(std::move(src)), dctx_(ZSTD_createDCtx()), prefix_(std::move(prefix)), middle_(std::move(middle)),
      request_left_(request_len), response_left_(response_len) {
  if (dctx_) ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, kWindowLogMax);
  failed_ = !dctx_;
}

CaptureReader::CaptureReader(CaptureReader&& o) noexcept
    : src_(std::move(o.src_)), dctx_(std::exchange(o.dctx_, nullptr)), prefix_(std::move(o.prefix_)),
      middle_(std::move(o.middle_)), request_left_(o.request_left_), response_left_(o.response_left_),
      in_(std::move(o.in_)), in_pos_(o.in_pos_), raw_(std::move(o.raw_)), part_(o.part_),
      frame_done_(o.frame_done_), failed_(o.failed_) {}

CaptureReader::~CaptureReader() { ZSTD_freeDCtx(dctx_); }

std::string CaptureReader::next() {
  std::string out;
  while (out.empty() && part_ < 5 && !failed_) {
    switch (part_) {
      case 0: out = std::move(prefix_), part_ = 1; break;
      case 1: body(request_left_, out); if (request_left_ == 0 && !failed_) part_ = 2; break;
      case 2: out = std::move(middle_), part_ = 3; break;
      case 3: body(response_left_, out); if (response_left_ == 0 && !failed_) part_ = 4; break;
      default: out = "\"}}", part_ = 5;
    }
  }
  if (failed_) return {};
  return out;
}

void CaptureReader::body(std::uint64_t& left, std::string& out) {
  if (left == 0) return;
  // raw_ is empty or holds the start of a UTF-8 sequence the previous piece could not end.
  if (raw_.size() < 4 || raw_.size() < left) {
    if (!fill() && raw_.empty()) {
      failed_ = true;  // the frame ended before the bodies it should hold
      return;
    }
  }
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, raw_.size()));
  out.reserve(out.size() + 6 * n);  // the worst case (\u00XX): one allocation a piece
  const std::size_t used = escape_json(std::string_view(raw_).substr(0, n), n == left, out);
  if (used == 0) {  // a cut sequence that fill() could not complete: the frame ended early
    failed_ = true;
    return;
  }
  raw_.erase(0, used);
  left -= used;
}

bool CaptureReader::fill() {
  if (failed_ || frame_done_) return false;
  const std::size_t have = raw_.size();
  if (have >= kRaw) return true;
  raw_.resize(kRaw);
  ZSTD_outBuffer dst{raw_.data(), raw_.size(), have};
  while (dst.pos == have) {
    if (in_pos_ == in_.size()) {
      in_.resize(kIn);
      const long r = src_->read(in_.data(), in_.size());
      if (r <= 0) {  // the file is gone or shorter than its frame
        failed_ = true;
        break;
      }
      in_.resize(static_cast<std::size_t>(r));
      in_pos_ = 0;
    }
    ZSTD_inBuffer src{in_.data(), in_.size(), in_pos_};
    const std::size_t ret = ZSTD_decompressStream(dctx_, &dst, &src);
    in_pos_ = src.pos;
    if (ZSTD_isError(ret)) {
      failed_ = true;  // damaged, or its checksum does not match
      break;
    }
    if (ret == 0) {
      frame_done_ = true;
      break;
    }
  }
  raw_.resize(dst.pos);
  return dst.pos > have;
}

std::optional<CaptureReader> CaptureRing::open(std::string_view id) const {
  const auto it = kept_.find(id);
  if (it == kept_.end()) return std::nullopt;
  const Kept& k = it->second;
  auto src = std::make_unique<CaptureReader::Source>();
  if (k.ram) {
    src->ram = k.ram;
  } else {
    src->fd.reset(::open(k.file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (src->fd.fd < 0) return std::nullopt;
  }
  return CaptureReader(std::move(src), k.prefix, k.middle, k.request_len, k.response_len);
}

}  // namespace kevlaya::activity
