#include "http/framing.hpp"

namespace kevlaya::http {

namespace bhttp = boost::beast::http;

// One pass over the fields (a request has a handful): Beast's count() and find() by field each walk
// its name index, four lookups per request.
std::optional<std::string> framing_problem(const bhttp::request_header<>& f) {
  int cl_count = 0, te_count = 0;
  boost::beast::string_view cl, te;
  for (const auto& field : f) {
    if (field.name() == bhttp::field::content_length) ++cl_count, cl = field.value();
    else if (field.name() == bhttp::field::transfer_encoding) ++te_count, te = field.value();
  }
  if (cl_count > 1 || (cl_count == 1 && cl.find(',') != boost::beast::string_view::npos))
    return "repeated Content-Length";
  if (te_count > 1) return "repeated Transfer-Encoding";
  if (te_count == 1) {
    if (f.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
    if (cl_count > 0) return "Content-Length with Transfer-Encoding";
    if (!boost::beast::iequals(te, "chunked")) return "unsupported Transfer-Encoding (only 'chunked')";
  }
  return std::nullopt;
}

}  // namespace kevlaya::http
