// Hostile input: every broken header ends in one bad_model error naming what and where.
#include <catch2/catch.hpp>

#include "gguf_bytes.hpp"

using kevlaya::test::Bytes;
using kevlaya::test::parse_error;

TEST_CASE("hostile: empty and truncated headers", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}) == "truncated magic (need 4 bytes, 0 left), at byte offset 0");
  CHECK(parse_error(Bytes{}.raw("GGUF").u32(3).u32(0)) ==
        "truncated tensor count (need 8 bytes, 4 left), at byte offset 8");
  CHECK(parse_error(Bytes{}.raw("GGUF").u32(3).u64(0)) ==
        "truncated metadata count (need 8 bytes, 0 left), at byte offset 16");
  auto r = kevlaya::gguf::read_buffer(nullptr, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == kevlaya::Errc::bad_model);
}

TEST_CASE("hostile: wrong magic and versions", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.raw("GGML").u32(3).u64(0).u64(0)) ==
        "not a GGUF file: magic is \"GGML\" (expected \"GGUF\"), at byte offset 0");
  CHECK(parse_error(Bytes{}.raw("\x7f" "ELF").u64(0)) ==
        "not a GGUF file: magic is \"?ELF\" (expected \"GGUF\"), at byte offset 0");
  CHECK(parse_error(Bytes{}.header(0, 0, 1)) == "unsupported GGUF version 1 (supported: 2, 3), at byte offset 4");
  CHECK(parse_error(Bytes{}.header(0, 0, 0x03000000)) ==
        "unsupported GGUF version 50331648 (big-endian files are not supported), at byte offset 4");
  CHECK(Bytes{}.header(0, 0, 2).parse().ok());
  CHECK(Bytes{}.header(0, 0, 3).parse().ok());
}

TEST_CASE("hostile: absurd counts are rejected before anything is reserved", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(1ULL << 60, 0)) ==
        "tensor count 1152921504606846976 exceeds what the remaining 0 bytes can hold, at byte offset 8");
  CHECK(parse_error(Bytes{}.header(0, 1ULL << 60)) ==
        "metadata count 1152921504606846976 exceeds what the remaining 0 bytes can hold, at byte offset 16");
  CHECK(parse_error(Bytes{}.header(3, 0).zeros(30)) ==
        "tensor count 3 exceeds what the remaining 30 bytes can hold, at byte offset 8");
  CHECK(parse_error(Bytes{}.header(0, 1).str("a").u32(9).u32(4).u64(1ULL << 62).u32(0)) ==
        "array length 4611686018427387904 of key 'a' exceeds the remaining 4 bytes, at byte offset 41");
  CHECK(parse_error(Bytes{}.header(0, 1).str("a").u32(9).u32(8).u64(1ULL << 40).zeros(16)) ==
        "array length 1099511627776 of key 'a' exceeds the remaining 16 bytes, at byte offset 41");
}

TEST_CASE("hostile: strings past the end of the file", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(0, 1).u64(1ULL << 40).raw("keyword")) ==
        "metadata key length 1099511627776 runs past the end of the file (7 bytes left), at byte offset 24");
  CHECK(parse_error(Bytes{}.header(0, 1).str("s").u32(8).u64(100).raw("abc")) ==
        "string value of 's' length 100 runs past the end of the file (3 bytes left), at byte offset 37");
  // A long string array: the elements past the kept prefix are checked too.
  Bytes b;
  b.header(0, 1).str("toks").u32(9).u32(8).u64(100);
  for (int i = 0; i < 99; ++i) b.str("t" + std::to_string(i));
  const std::size_t at = b.size();
  b.u64(50).raw("short");
  CHECK(parse_error(b) == "element 99 of 'toks' length 50 runs past the end of the file (5 bytes left), at byte offset " +
                              std::to_string(at));
}

TEST_CASE("hostile: value types", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(0, 1).str("k").u32(13).u64(0)) ==
        "unknown value type 13 for key 'k', at byte offset 33");
  CHECK(parse_error(Bytes{}.header(0, 1).str("n").u32(9).u32(9).u64(1)) ==
        "nested array in key 'n' is not supported, at byte offset 37");
  CHECK(parse_error(Bytes{}.header(0, 1).str("e").u32(9).u32(77).u64(1)) ==
        "unknown array element type 77 for key 'e', at byte offset 37");
  CHECK(parse_error(Bytes{}.header(0, 1).str("x").u32(4).raw("ab")) ==
        "truncated value of 'x' (need 4 bytes, 2 left), at byte offset 37");
  CHECK(parse_error(Bytes{}.header(0, 2).kv_u32("a", 1).kv_u32("a", 2)) ==
        "duplicate metadata key 'a', at byte offset 41");
}

TEST_CASE("hostile: general.alignment must be a uint32 power of two", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(0, 1).kv_u32("general.alignment", 3)) ==
        "general.alignment must be a uint32 power of two, at byte offset 53");
  CHECK(parse_error(Bytes{}.header(0, 1).kv_u32("general.alignment", 0)) ==
        "general.alignment must be a uint32 power of two, at byte offset 53");
  CHECK(parse_error(Bytes{}.header(0, 1).str("general.alignment").u32(10).u64(64)) ==
        "general.alignment must be a uint32 power of two, at byte offset 53");
}

TEST_CASE("hostile: tensor infos", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0)) ==
        "tensor 't' has 5 dimensions (max 4), at byte offset 33");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {4}, 4, 0)) ==
        "unknown ggml type 4 for tensor 't', at byte offset 45");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {4}, 99, 0)) ==
        "unknown ggml type 99 for tensor 't', at byte offset 45");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {31}, 2, 0)) ==
        "tensor 't' row of 31 elements is not a multiple of the q4_0 block size 32, at byte offset 45");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {~0ULL}, 0, 0)) ==
        "tensor 't' dimension 0 is negative, at byte offset 37");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {1ULL << 32, 1ULL << 32}, 0, 0)) ==
        "tensor 't' has too many elements, at byte offset 33");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {4}, 0, 8)) ==
        "tensor 't' data offset 8 is not a multiple of the alignment 32, at byte offset 49");
  CHECK(parse_error(Bytes{}.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32)) ==
        "duplicate tensor name 't', at byte offset 57");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor(std::string(64, 'x'), {4}, 0, 0)) ==
        "tensor name 'xxxxxxxxxxxxxxxx...' is longer than 63 bytes, at byte offset 24");
  CHECK(parse_error(Bytes{}.header(1, 0).str("t").u32(1).u64(4).u32(0).zeros(2)) ==
        "truncated data offset of tensor 't' (need 8 bytes, 2 left), at byte offset 49");
}

TEST_CASE("hostile: tensor data must lie inside the file", "[gguf][hostile]") {
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {1024}, 0, 0).pad_to(32)) ==
        "tensor 't' data (4096 bytes at data offset 0) runs past the end of the file (64 bytes), at byte offset 49");
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {0}, 0, 0)) ==
        "data section start 64 is past the end of the file (57 bytes), at byte offset 57");
  // 2^62 elements of f32 would overflow a naive offset + size sum.
  CHECK(parse_error(Bytes{}.header(1, 0).tensor("t", {1ULL << 31, 1ULL << 31}, 0, 1ULL << 63).pad_to(32)) ==
        "tensor 't' data (18446744073709551615 bytes at data offset 9223372036854775808) runs past the end "
        "of the file (96 bytes), at byte offset 57");
  CHECK(Bytes{}.header(1, 0).tensor("t", {4}, 0, 0).pad_to(32).zeros(16).parse().ok());
}
