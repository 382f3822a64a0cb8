#include "http/framing.hpp"

namespace kevlaya::http {

namespace bhttp = boost::beast::http;

std::optional<std::string> framing_problem(const bhttp::request_header<>& f) {
  if (f.count(bhttp::field::content_length) > 1) return "repeated Content-Length";
  auto cl = f.find(bhttp::field::content_length);
  if (cl != f.end() && cl->value().find(',') != boost::beast::string_view::npos)
    return "repeated Content-Length";
  const auto te_count = f.count(bhttp::field::transfer_encoding);
  if (te_count > 1) return "repeated Transfer-Encoding";
  if (te_count == 1) {
    if (f.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
    if (cl != f.end()) return "Content-Length with Transfer-Encoding";
    if (!boost::beast::iequals(f[bhttp::field::transfer_encoding], "chunked"))
      return "unsupported Transfer-Encoding (only 'chunked')";
  }
  return std::nullopt;
}

ParsedRequest parse_request(std::string_view raw, std::size_t max_header_bytes,
                            std::uint64_t max_body_bytes) {
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
      if (auto why = framing_problem(parser.get())) {
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

}  // namespace kevlaya::http
