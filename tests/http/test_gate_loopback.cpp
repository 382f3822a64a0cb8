// The Host check stays on for every spelling of a loopback listen address (issue 45): an
// IPv4-mapped IPv6 loopback (::ffff:127.0.0.1) was taken for a public address, which turned the
// DNS-rebinding guard off. Pure: GatePolicy::from and check_host on a parsed header.
#include <catch2/catch.hpp>

#include <boost/beast/http.hpp>

#include "http/gate.hpp"

namespace bhttp = boost::beast::http;
using kevlaya::http::check_host;
using kevlaya::http::GatePolicy;

namespace {

bhttp::fields with_host(const std::string& host) {
  bhttp::fields f;
  f.set(bhttp::field::host, host);
  return f;
}

}  // namespace

TEST_CASE("gate: every loopback spelling of listen.host keeps the Host check on", "[http]") {
  for (const char* listen : {"127.0.0.1", "127.0.0.2", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
                             "::FFFF:127.1.2.3", "::ffff:7f00:1", "0:0:0:0:0:ffff:127.0.0.1", "::127.0.0.1"}) {
    INFO(listen);
    const auto p = GatePolicy::from(listen, {}, {});
    CHECK(p.check_host);
    const auto refused = check_host(p, with_host("evil.example"));
    REQUIRE(refused.has_value());
    CHECK(refused->code == kevlaya::Errc::forbidden);
    CHECK_FALSE(check_host(p, with_host("127.0.0.1:8080")).has_value());
  }
}

TEST_CASE("gate: a public or wildcard listen.host without allowed_hosts leaves the Host check off", "[http]") {
  for (const char* listen : {"0.0.0.0", "::", "192.168.1.10", "::ffff:192.168.1.10", "2001:db8::1"}) {
    INFO(listen);
    CHECK_FALSE(GatePolicy::from(listen, {}, {}).check_host);
  }
}

TEST_CASE("gate: a bracketed IPv6 loopback literal is a loopback Host name", "[http]") {
  const auto p = GatePolicy::from("::ffff:127.0.0.1", {}, {});
  for (const char* host : {"[::1]:8080", "[::ffff:127.0.0.1]:8080", "[0:0:0:0:0:0:0:1]", "[::ffff:7f00:1]"}) {
    INFO(host);
    CHECK_FALSE(check_host(p, with_host(host)).has_value());
  }
  for (const char* host : {"[::ffff:10.0.0.1]", "[2001:db8::1]:80", "[::]", "[evil.example]"}) {
    INFO(host);
    CHECK(check_host(p, with_host(host)).has_value());
  }
}
