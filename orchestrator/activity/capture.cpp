#include "activity/capture.hpp"

#include <zstd.h>

#include <algorithm>
#include <cctype>

namespace kevlaya::activity {
namespace {

using nlohmann::json;

constexpr int kLevel = 3;  // zstd's default: text bodies shrink 3-10x at a few hundred MB/s

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string compress(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const auto n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), kLevel);
  if (ZSTD_isError(n)) return {};
  out.resize(n);
  out.shrink_to_fit();
  return out;
}

std::optional<std::string> decompress(const std::string& blob) {
  const auto size = ZSTD_getFrameContentSize(blob.data(), blob.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return std::nullopt;
  std::string out(static_cast<std::size_t>(size), '\0');
  const auto n = ZSTD_decompress(out.data(), out.size(), blob.data(), blob.size());
  if (ZSTD_isError(n)) return std::nullopt;
  out.resize(n);
  return out;
}

json headers_json(const HeaderPairs& h) {
  json a = json::array();
  for (const auto& [k, v] : h) a.push_back({k, v});
  return a;
}

}  // namespace

bool is_secret_header(std::string_view name) {
  for (const std::string_view s : {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"})
    if (iequal(name, s)) return true;
  return false;
}

HeaderPairs redact(HeaderPairs headers) {
  for (auto& [k, v] : headers)
    if (is_secret_header(k)) v = "[redacted]";
  return headers;
}

bool CaptureRing::add(Capture c) {
  const json doc = {{"id", c.id},
                    {"at_ms", c.at_ms},
                    {"model", c.model},
                    {"endpoint", c.endpoint},
                    {"method", c.method},
                    {"request", {{"headers", headers_json(redact(std::move(c.request_headers)))}, {"body", c.request_body}}},
                    {"response", {{"status", c.status}, {"body", c.response_body}}}};
  std::string blob = compress(doc.dump(-1, ' ', false, json::error_handler_t::replace));
  if (blob.empty() || blob.size() > max_bytes_) return false;
  while (!order_.empty() && bytes_ + blob.size() > max_bytes_) {
    const auto it = blobs_.find(order_.front());
    bytes_ -= it->second.size();
    blobs_.erase(it);
    order_.pop_front();
  }
  bytes_ += blob.size();
  order_.push_back(c.id);
  blobs_.emplace(std::move(c.id), std::move(blob));
  return true;
}

std::optional<json> CaptureRing::get(const std::string& id) const {
  const auto it = blobs_.find(id);
  if (it == blobs_.end()) return std::nullopt;
  const auto text = decompress(it->second);
  if (!text) return std::nullopt;
  return json::parse(*text, nullptr, false);
}

}  // namespace kevlaya::activity
