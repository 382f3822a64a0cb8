#include <catch2/catch.hpp>

#include <string>

#include "common/credentials.hpp"

TEST_CASE("credential headers are found by substring in any case, at any length", "[common]") {
  for (const char* h : {"Authorization", "X-API-KEY", "x-goog-api-key", "Cookie", "X-Amz-Security-Token",
                        "Proxy-Authorization", "X-Hub-Signature-256", "X-Vault-TOKEN"})
    CHECK(kevlaya::is_credential_header(h));
  // Long names: the same answer.
  CHECK(kevlaya::is_credential_header(std::string(200, 'x') + "-Secret"));
  CHECK_FALSE(kevlaya::is_credential_header(std::string(200, 'x') + "-Session"));
}

TEST_CASE("session and ordinary headers are not credentials", "[common]") {
  for (const char* h : {"X-Session-ID", "User-Agent", "X-Request-Id", "Content-Type", "Host", ""})
    CHECK_FALSE(kevlaya::is_credential_header(h));
}
