// A model of the door's request reader on a byte buffer, for the fuzz target and its seed test:
// Beast's parser with the door's header and body limits, then the framing rules the reader applies
// once the header is in (http/framing.hpp). The door itself reads with Connection::read_request
// (fuzz_door drives that one over a socket); this one needs no connection, so libFuzzer can run it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "http/framing.hpp"

namespace kevlaya::fuzz {

// status 0 = complete and acceptable; else the status the door answers with (400 bad framing or
// malformed, 413 body too large); `complete` false with status 0 = the bytes end before the request.
struct ParsedRequest {
  int status = 0;
  bool complete = false;
  std::string error;
  boost::beast::http::request<boost::beast::http::string_body> request;
  std::size_t consumed = 0;  // bytes of `raw` that belong to this request
};

inline ParsedRequest parse_request(std::string_view raw, std::size_t max_header_bytes, std::uint64_t max_body_bytes) {
  namespace bhttp = boost::beast::http;
  ParsedRequest out;
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(max_header_bytes));
  parser.body_limit(max_body_bytes);
  boost::system::error_code ec;
  bool checked = false;
  while (!ec && !parser.is_done() && out.consumed < raw.size()) {
    const auto n = parser.put(boost::asio::buffer(raw.data() + out.consumed, raw.size() - out.consumed), ec);
    out.consumed += n;
    if (ec == bhttp::error::need_more) return out;  // incomplete
    if (!ec && parser.is_header_done() && !checked) {
      checked = true;
      if (auto why = http::framing_problem(parser.get())) {
        out.status = 400;
        out.error = "malformed HTTP request: " + *why;
        return out;
      }
    }
    if (!ec && n == 0) return out;
  }
  if (ec) {
    out.status = ec == bhttp::error::body_limit ? 413 : 400;
    out.error = "malformed HTTP request: " + ec.message();
    return out;
  }
  out.complete = parser.is_done();
  if (out.complete) out.request = parser.release();
  return out;
}

}  // namespace kevlaya::fuzz
