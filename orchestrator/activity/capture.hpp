// Captures (docs/http.md "Captures"): the request and response bodies of recent model calls. A
// call's bodies are compressed (zstd, one stream per capture) as they pass, into a file of the
// captures folder (state_dir/captures) or, without a folder, a RAM string; every capture, those
// still being written included, counts against one byte budget (the oldest kept ones go first),
// and one capture stops (marked truncated) at its own cap. A capture is read back as its JSON, a
// piece at a time. Credentials are redacted before anything is kept. Not synchronised: the door's
// strand owns it.
#pragma once
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace kevlaya::activity {

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

// Every credential header (common/credentials.hpp, any case) keeps its name and loses its value
// ("[redacted]").
HeaderPairs redact(HeaderPairs headers);

// What a capture says about its call besides the bodies.
struct CaptureInfo {
  std::string id;  // random, so a record's link never reaches another door's capture
  std::int64_t at_ms = 0;
  std::string model, endpoint, method;
  HeaderPairs request_headers;  // redacted when the capture is kept
  int status = 0;
};

// A whole capture at once (CaptureRing::add).
struct Capture : CaptureInfo {
  std::string request_body;
  std::string response_body;
};

class CaptureRing;

// One capture being written while its call runs (CaptureRing::start). Its bodies go through a
// zstd stream with a 64 KiB window: what it holds in RAM besides the stored frame is that
// context, whatever the bodies' size.
class CaptureWriter {
 public:
  ~CaptureWriter();  // unfinished (the call never ended it): its bytes are given back
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Request body bytes; all of them come before the first response byte.
  void request(std::string_view bytes);
  // Response body bytes as the client got them.
  void response(std::string_view bytes);
  bool truncated() const { return truncated_; }        // some bytes were not kept (a cap, a failed write)
  std::size_t compressed() const { return produced_; }  // bytes stored so far
  std::uint64_t raw() const { return request_len_ + response_len_; }  // body bytes kept so far
  std::size_t memory() const;  // RAM this writer holds besides the stored frame (zstd's context)

 private:
  friend class CaptureRing;
  CaptureWriter(CaptureRing& ring, int fd, std::filesystem::path file);
  void feed(std::string_view bytes, std::uint64_t& counter);
  bool compress(std::string_view in, bool end);  // false: stop (a cap, or the write failed)
  bool store(const char* data, std::size_t n);

  CaptureRing& ring_;
  ZSTD_CCtx_s* cctx_ = nullptr;
  int fd_ = -1;                 // the capture's file (disk), or -1 (RAM)
  std::filesystem::path file_;  // disk: where it is
  std::string ram_;             // RAM: the frame
  std::size_t produced_ = 0;    // compressed bytes stored (and charged to the ring)
  std::uint64_t request_len_ = 0, response_len_ = 0;
  bool stopped_ = false;    // past a cap: nothing more is compressed
  bool truncated_ = false;
  bool failed_ = false;     // a write or compression failed: the frame is not whole
  bool finished_ = false;
};

// A kept capture read back as its JSON document ({"id", "at_ms", "model", "endpoint", "method",
// "truncated", "request": {"headers", "body"}, "response": {"status", "body"}}), a piece at a
// time: at most about 6 x 64 KiB per piece (control characters are escaped as \u00XX).
class CaptureReader {
 public:
  ~CaptureReader();
  CaptureReader(CaptureReader&&) noexcept;
  CaptureReader& operator=(CaptureReader&&) = delete;
  CaptureReader(const CaptureReader&) = delete;

  // The next piece of the JSON; "" once it is all out, or when the stored frame turned out
  // unreadable (failed(): what was returned is then not a whole document).
  std::string next();
  bool failed() const { return failed_; }

 private:
  friend class CaptureRing;
  struct Source;
  CaptureReader(std::unique_ptr<Source> src, std::string prefix, std::string middle, std::uint64_t request_len,
                std::uint64_t response_len);
  bool fill();                                 // more raw bytes into raw_; false on a bad frame
  void body(std::uint64_t& left, std::string& out);  // escapes one piece of the body in progress

  std::unique_ptr<Source> src_;
  ZSTD_DCtx_s* dctx_ = nullptr;
  std::string prefix_, middle_;
  std::uint64_t request_left_, response_left_;
  std::string in_;   // compressed bytes read, not yet decompressed
  std::size_t in_pos_ = 0;
  std::string raw_;  // decompressed bytes not yet escaped
  int part_ = 0;     // 0 prefix, 1 request body, 2 middle, 3 response body, 4 end, 5 done
  bool frame_done_ = false;
  bool failed_ = false;
};

class CaptureRing {
 public:
  // At most `max_bytes` compressed (and the few bytes of each capture's headers) in all; one
  // capture at most a quarter of it, and kMaxRawBytes of bodies. `dir` set: the frames are files
  // there (what a previous run left is removed); empty: RAM.
  explicit CaptureRing(std::size_t max_bytes, std::filesystem::path dir = {});
  ~CaptureRing();  // removes its files
  CaptureRing(const CaptureRing&) = delete;
  CaptureRing& operator=(const CaptureRing&) = delete;

  static constexpr std::uint64_t kMaxRawBytes = std::uint64_t{1} << 30;

  // A capture for a call that begins; null when none can be written (no zstd context, no file).
  std::unique_ptr<CaptureWriter> start();
  // Ends `w`'s stream and keeps it under `info.id` with `info` (headers redacted here), dropping
  // the oldest until the ring fits; false (nothing kept) when its frame is broken or larger than
  // the whole ring.
  bool finish(std::unique_ptr<CaptureWriter> w, CaptureInfo info);
  // start, request, response and finish at once (small bodies: the whole of them is compressed now).
  bool add(Capture c);
  // The capture `id` as its JSON, read a piece at a time; nullopt when there is none.
  std::optional<CaptureReader> open(std::string_view id) const;
  std::size_t bytes() const { return bytes_; }  // charged: kept captures and those being written
  std::size_t size() const { return order_.size(); }  // kept captures
  std::size_t max_capture_bytes() const { return max_bytes_ / 4; }

 private:
  friend class CaptureWriter;
  struct Kept {
    std::string prefix, middle;  // the JSON around the bodies
    std::uint64_t request_len = 0, response_len = 0;
    std::shared_ptr<const std::string> ram;  // RAM: the frame
    std::filesystem::path file;              // disk: the frame's file
    std::size_t bytes = 0;                   // charged
  };
  bool charge(std::size_t n);  // false: the ring is over budget with no kept capture left to drop
  void refund(std::size_t n) { bytes_ -= n; }
  void drop_oldest();

  std::size_t max_bytes_;
  std::filesystem::path dir_;
  std::uint64_t next_file_ = 1;
  std::size_t bytes_ = 0;
  std::map<std::string, Kept, std::less<>> kept_;
  std::deque<std::string> order_;  // ids, oldest first
};

}  // namespace kevlaya::activity
