// Request framing rules of the REST door, apart from the network so they can be tested and
// fuzzed on raw bytes (tests/fuzz/parse_request.hpp). The door proxies to children, so any ambiguity about where a request ends
// (request smuggling) is refused with 400. Internal to http/ (Beast types).
#pragma once
#include <boost/beast/http.hpp>
#include <optional>
#include <string>

namespace kevlaya::http {

// Why a parsed header's framing is refused, or nullopt: repeated or list Content-Length, a
// Transfer-Encoding other than exactly `chunked` (Beast takes "gzip, chunked" as chunked and
// "chunked, identity" as no body), a repeated Transfer-Encoding, or one in an HTTP/1.0 request
// (RFC 9112 6.1: its framing is faulty; 1.0 has no chunked coding).
std::optional<std::string> framing_problem(const boost::beast::http::request_header<>& h);

}  // namespace kevlaya::http
