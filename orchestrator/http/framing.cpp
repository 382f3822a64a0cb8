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

}  // namespace kevlaya::http
