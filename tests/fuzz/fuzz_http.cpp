// libFuzzer entry for the front door's request handling without a network: raw bytes are parsed
// with the door's limits and framing rules (http/framing.cpp, what Connection::read_request
// applies), then what a parsed request feeds to routing is exercised: the API-key check, the
// path/query split and the JSON body parse. Must never crash, hang or grow without bound; a
// refused request must carry a 400 or 413.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "http/auth.hpp"
#include "http/framing.hpp"

namespace {

constexpr std::size_t kMaxHeader = 16 * 1024;  // ServerOptions defaults
constexpr std::uint64_t kMaxBody = 1 << 20;

std::string_view field(const boost::beast::http::request<boost::beast::http::string_body>& r,
                       std::string_view name) {
  auto it = r.find(boost::beast::string_view(name.data(), name.size()));
  if (it == r.end()) return {};
  return {it->value().data(), it->value().size()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> keys = {"sk-test-key", "second"};
  // Pipelined requests: parse until the bytes run out, as the keep-alive loop does.
  for (int i = 0; i < 8 && !raw.empty(); ++i) {
    auto p = kevlaya::http::parse_request(raw, kMaxHeader, kMaxBody);
    if (p.status != 0) {
      if (p.status != 400 && p.status != 413) __builtin_trap();
      break;
    }
    if (!p.complete) break;
    if (p.consumed == 0 || p.consumed > raw.size()) __builtin_trap();  // must make progress
    raw.remove_prefix(p.consumed);
    const auto& req = p.request;
    (void)kevlaya::http::authorized(keys, field(req, "Authorization"), field(req, "X-Api-Key"));
    const std::string_view target(req.target().data(), req.target().size());
    const auto q = target.find('?');
    (void)target.substr(0, q);
    const auto body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_object() && body.contains("model")) (void)body["model"].is_string();
  }
  return 0;
}
