// framing_problem's verdict for each framing rule, on parsed headers (the door's one pass over the
// fields must keep every rule: tests/http/test_limits.cpp covers them over a socket).
#include <catch2/catch.hpp>

#include "http/framing.hpp"

namespace bhttp = boost::beast::http;

namespace {

bhttp::request_header<> head(std::initializer_list<std::pair<const char*, const char*>> fields, unsigned version = 11) {
  bhttp::request_header<> h;
  h.version(version);
  h.method(bhttp::verb::post);
  h.target("/v1/chat/completions");
  for (const auto& [k, v] : fields) h.insert(k, v);
  return h;
}

std::string verdict(const bhttp::request_header<>& h) { return kevlaya::http::framing_problem(h).value_or("ok"); }

}  // namespace

TEST_CASE("framing: one Content-Length, one chunked Transfer-Encoding, or neither is sound", "[http]") {
  CHECK(verdict(head({{"Host", "x"}, {"Content-Length", "2"}})) == "ok");
  CHECK(verdict(head({{"Host", "x"}, {"Transfer-Encoding", "Chunked"}})) == "ok");
  CHECK(verdict(head({{"Host", "x"}})) == "ok");
  CHECK(verdict(head({{"Content-Length", "2"}}, 10)) == "ok");
}

TEST_CASE("framing: each ambiguity is named", "[http]") {
  CHECK(verdict(head({{"Content-Length", "2"}, {"Content-Length", "2"}})) == "repeated Content-Length");
  CHECK(verdict(head({{"Content-Length", "2, 2"}})) == "repeated Content-Length");
  CHECK(verdict(head({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}})) ==
        "repeated Transfer-Encoding");
  CHECK(verdict(head({{"Transfer-Encoding", "chunked"}}, 10)) == "Transfer-Encoding in an HTTP/1.0 request");
  CHECK(verdict(head({{"Content-Length", "2"}, {"Transfer-Encoding", "chunked"}})) ==
        "Content-Length with Transfer-Encoding");
  CHECK(verdict(head({{"Transfer-Encoding", "chunked"}, {"Content-Length", "2"}})) ==
        "Content-Length with Transfer-Encoding");
  CHECK(verdict(head({{"Transfer-Encoding", "gzip, chunked"}})) == "unsupported Transfer-Encoding (only 'chunked')");
}
