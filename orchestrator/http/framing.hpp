// Request framing rules of the REST door, apart from the network so they can be tested and
// fuzzed on raw bytes. The door proxies to children, so any ambiguity about where a request ends
// (request smuggling) is refused with 400. Internal to http/ (Beast types).
#pragma once
#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kevlaya::http {

// Why a parsed header's framing is refused, or nullopt: repeated or list Content-Length, a
// Transfer-Encoding other than exactly `chunked` (Beast takes "gzip, chunked" as chunked and
// "chunked, identity" as no body), a repeated Transfer-Encoding, or one in an HTTP/1.0 request
// (RFC 9112 6.1: its framing is faulty; 1.0 has no chunked coding).
std::optional<std::string> framing_problem(const boost::beast::http::request_header<>& h);

// One raw request parsed with the door's rules. status 0 = complete and acceptable; else the
// status the door answers with (400 bad framing / malformed, 413 body too large); `complete`
// false with status 0 = the bytes end before the request does.
struct ParsedRequest {
  int status = 0;
  bool complete = false;
  std::string error;
  boost::beast::http::request<boost::beast::http::string_body> request;
  std::size_t consumed = 0;  // bytes of `raw` that belong to this request
};
ParsedRequest parse_request(std::string_view raw, std::size_t max_header_bytes,
                            std::uint64_t max_body_bytes);

}  // namespace kevlaya::http
