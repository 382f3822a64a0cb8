// Captures (docs/http.md "Captures"): the request and response bodies of recent model calls, kept
// compressed (zstd) in a RAM ring bounded by bytes, with credentials redacted before they are
// stored. Off by default; read by admin keys only. Not synchronised: the door's strand owns it.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kevlaya::activity {

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

// Authorization, Proxy-Authorization, X-Api-Key, Api-Key, Cookie and Set-Cookie (any case) keep
// their name and lose their value ("[redacted]").
HeaderPairs redact(HeaderPairs headers);
bool is_secret_header(std::string_view name);

struct Capture {
  std::string id;  // random, so a record's link never reaches another door's capture
  std::int64_t at_ms = 0;
  std::string model, endpoint, method;
  HeaderPairs request_headers;  // redacted by add()
  std::string request_body;
  int status = 0;
  std::string response_body;
};

class CaptureRing {
 public:
  explicit CaptureRing(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  // Redacts, compresses and keeps `c`, dropping the oldest until the ring fits; a capture larger
  // than the whole ring is not kept (false).
  bool add(Capture c);
  std::optional<nlohmann::json> get(const std::string& id) const;  // decompressed, as JSON
  std::size_t bytes() const { return bytes_; }  // compressed bytes held
  std::size_t size() const { return order_.size(); }

 private:
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::map<std::string, std::string, std::less<>> blobs_;  // id -> zstd frame of the JSON
  std::deque<std::string> order_;                          // ids, oldest first
};

}  // namespace kevlaya::activity
