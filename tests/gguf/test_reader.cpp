// Reader on well-formed input: stories260K's shape (the project's model, llama2.c's file when present), every value type, big arrays, traits.
#include <catch2/catch.hpp>
#include <numeric>

#include "gguf/gguf.hpp"
#include "gguf_bytes.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"

namespace gg = kevlaya::gguf;
using kevlaya::test::Bytes;

namespace {

// stories260K's shape, as the file says it: llama2.c's model and the project's stories-shaped model.
void check_stories_info(const std::filesystem::path& path) {
  auto m = gg::inspect(path);
  REQUIRE(m.ok());
  CHECK(m->architecture == "llama");
  CHECK(m->n_embd == 64);
  CHECK(m->n_layer == 5);
  CHECK(m->n_head == 8);
  CHECK(m->n_head_kv == 4);
  CHECK(m->head_dim_k == 8);
  CHECK(m->head_dim_v == 8);
  CHECK(m->n_ff == 172);
  CHECK(m->n_vocab == 512);
  CHECK(m->n_ctx_train == 2048);
  CHECK(m->quant == "F32");
  CHECK(m->bytes_by_type.size() == 1);
  CHECK(m->bytes_by_type.count("f32") == 1);
  REQUIRE(m->layer_bytes.size() == 5);
  for (auto b : m->layer_bytes) CHECK(b == m->layer_bytes[0]);
  // token_embd and output are {64, 512} f32; output_norm is 64 f32.
  CHECK(m->token_embd_bytes == 64 * 512 * 4);
  CHECK(m->output_bytes == 64 * 512 * 4 + 64 * 4);
  const auto layers = std::accumulate(m->layer_bytes.begin(), m->layer_bytes.end(), std::uint64_t{0});
  CHECK(m->tensor_bytes == layers + m->output_bytes + m->token_embd_bytes + m->other_bytes);
  CHECK(m->n_params * 4 == m->tensor_bytes);
  CHECK(m->tensor_bytes < m->file_size);
}

void check_stories_table(const std::filesystem::path& path) {
  auto f = gg::read_file(path);
  REQUIRE(f.ok());
  CHECK(f->version == 3);
  CHECK(f->alignment == 32);
  CHECK(f->data_offset % 32 == 0);
  CHECK(f->tensors.size() == 3 + 5 * 9);
  const auto* tokens = f->find("tokenizer.ggml.tokens");
  REQUIRE(tokens);
  CHECK(tokens->array_len == 512);
  CHECK(std::get<std::vector<std::string>>(tokens->v).size() == gg::kArrayKeep);  // only a prefix is kept
  for (const auto& t : f->tensors) CHECK(f->data_offset + t.offset + t.n_bytes() <= f->file_size);
}

}  // namespace

TEST_CASE("reader: stories-shaped model info", "[gguf]") { check_stories_info(kevlaya::test::tiny_llama()); }

TEST_CASE("reader: stories-shaped tensor table", "[gguf]") { check_stories_table(kevlaya::test::tiny_llama()); }

// llama2.c's own file (written by another program than ours, no general.file_type: the quant is
// inferred from the tensors); an optional extra.
TEST_CASE("reader: stories260K model info", "[gguf]") {
  KEVLAYA_SKIP_WITHOUT_STORIES260K();
  check_stories_info(kevlaya::test::stories260k());
}

TEST_CASE("reader: stories260K tensor table", "[gguf]") {
  KEVLAYA_SKIP_WITHOUT_STORIES260K();
  check_stories_table(kevlaya::test::stories260k());
}

TEST_CASE("reader: every value type, v2 and v3", "[gguf]") {
  for (std::uint32_t version : {2u, 3u}) {
    Bytes b;
    b.header(0, 13, version);
    b.str("u8").u32(0).put<std::uint8_t>(200).str("i8").u32(1).put<std::int8_t>(-5);
    b.str("u16").u32(2).put<std::uint16_t>(60000).str("i16").u32(3).put<std::int16_t>(-300);
    b.str("u32").u32(4).u32(4000000000u).str("i32").u32(5).put<std::int32_t>(-70000);
    b.str("f32").u32(6).put<float>(1.5f).str("bool").u32(7).put<std::uint8_t>(1);
    b.kv_str("str", "hello").str("u64").u32(10).u64(1ULL << 40);
    b.str("i64").u32(11).put<std::int64_t>(-(1LL << 40)).str("f64").u32(12).put<double>(-2.25);
    b.str("arr").u32(9).u32(5).u64(3).put<std::int32_t>(-1).put<std::int32_t>(0).put<std::int32_t>(7);
    auto f = b.parse();
    REQUIRE(f.ok());
    CHECK(f->version == version);
    CHECK(f->find("u8")->as_uint() == 200u);
    CHECK(f->find("i8")->as_uint() == std::nullopt);
    CHECK(f->find("i8")->as_float() == -5.0);
    CHECK(f->find("u16")->as_uint() == 60000u);
    CHECK(f->find("i16")->as_float() == -300.0);
    CHECK(f->find("u32")->as_uint() == 4000000000u);
    CHECK(f->find("i32")->as_float() == -70000.0);
    CHECK(f->find("f32")->as_float() == 1.5);
    CHECK(f->find("f32")->as_uint() == std::nullopt);
    CHECK(std::get<bool>(f->find("bool")->v));
    CHECK(f->find("str")->as_string() == "hello");
    CHECK(f->find("u64")->as_uint() == (1ULL << 40));
    CHECK(f->find("i64")->as_float() == -static_cast<double>(1LL << 40));
    CHECK(f->find("f64")->as_float() == -2.25);
    const auto* arr = f->find("arr");
    CHECK(arr->type == gg::ValueType::ARRAY);
    CHECK(arr->elem_type == gg::ValueType::INT32);
    CHECK(std::get<std::vector<std::int64_t>>(arr->v) == std::vector<std::int64_t>{-1, 0, 7});
    CHECK(f->find("missing") == nullptr);
  }
}

TEST_CASE("reader: a 150k-entry array keeps only its length and a prefix", "[gguf]") {
  constexpr std::uint64_t kN = 150000;
  Bytes b;
  b.header(0, 2).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(kN);
  for (std::uint64_t i = 0; i < kN; ++i) b.str("t" + std::to_string(i));
  b.str("tokenizer.ggml.scores").u32(9).u32(6).u64(kN);
  for (std::uint64_t i = 0; i < kN; ++i) b.put<float>(static_cast<float>(i));
  auto f = b.parse();
  REQUIRE(f.ok());
  const auto* tokens = f->find("tokenizer.ggml.tokens");
  CHECK(tokens->array_len == kN);
  const auto& kept = std::get<std::vector<std::string>>(tokens->v);
  REQUIRE(kept.size() == gg::kArrayKeep);
  CHECK(kept.back() == "t" + std::to_string(gg::kArrayKeep - 1));
  CHECK(std::get<std::vector<double>>(f->find("tokenizer.ggml.scores")->v).size() == gg::kArrayKeep);
}

TEST_CASE("reader: general.alignment moves the data section", "[gguf]") {
  Bytes b;
  b.header(1, 1).kv_u32("general.alignment", 64).tensor("t", {16}, 0, 0).pad_to(64).zeros(64);
  auto f = b.parse();
  REQUIRE(f.ok());
  CHECK(f->alignment == 64);
  CHECK(f->data_offset == 128);
  CHECK(f->tensors[0].n_bytes() == 64);
}

TEST_CASE("reader: read_file reports missing files and prefixes the path", "[gguf]") {
  auto missing = gg::read_file("/nonexistent/model.gguf");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == kevlaya::Errc::io_error);
  CHECK(missing.error().message.find("/nonexistent/model.gguf") != std::string::npos);
  kevlaya::test::TempDir dir("gguf-read");
  kevlaya::test::write_text(dir / "bad.gguf", "GGUX0000");
  auto bad = gg::read_file(dir / "bad.gguf");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == kevlaya::Errc::bad_model);
  CHECK(bad.error().message == (dir / "bad.gguf").string() +
                                   ": not a GGUF file: magic is \"GGUX\" (expected \"GGUF\"), at byte offset 0");
  kevlaya::test::write_text(dir / "empty.gguf", "");
  CHECK(gg::read_file(dir / "empty.gguf").error().message ==
        (dir / "empty.gguf").string() + ": truncated magic (need 4 bytes, 0 left), at byte offset 0");
}

TEST_CASE("types: ggml traits, file types and cache types", "[gguf]") {
  CHECK(gg::type_traits(0)->type_size == 4);
  CHECK(gg::type_traits(1)->type_size == 2);
  CHECK(gg::type_traits(8)->block_size == 32);
  CHECK(gg::type_traits(8)->type_size == 34);
  CHECK(gg::type_traits(12)->block_size == 256);
  CHECK(gg::type_traits(12)->type_size == 144);
  CHECK(std::string(gg::type_traits(14)->name) == "q6_K");
  CHECK(gg::type_traits(39)->type_size == 17);
  CHECK_FALSE(gg::type_traits(4).has_value());   // removed Q4_2
  CHECK_FALSE(gg::type_traits(31).has_value());  // removed Q4_0_4_4
  CHECK_FALSE(gg::type_traits(43).has_value());
  CHECK(gg::row_size(12, 4096) == 16 * 144);
  CHECK(gg::row_size(8, 64) == 68);
  CHECK(gg::row_size(99, 64) == 0);
  CHECK(gg::file_type_name(0) == "F32");
  CHECK(gg::file_type_name(1) == "F16");
  CHECK(gg::file_type_name(7) == "Q8_0");
  CHECK(gg::file_type_name(14) == "Q4_K_S");
  CHECK(gg::file_type_name(15) == "Q4_K_M");
  CHECK(gg::file_type_name(18) == "Q6_K");
  CHECK(gg::file_type_name(999) == "unknown(999)");
  CHECK(gg::cache_type_from_name("f16") == 1u);
  CHECK(gg::cache_type_from_name("q8_0") == 8u);
  CHECK(gg::cache_type_from_name("q4_0") == 2u);
  CHECK(gg::cache_type_from_name("iq4_nl") == 20u);
  CHECK_FALSE(gg::cache_type_from_name("q4_K").has_value());
  CHECK_FALSE(gg::cache_type_from_name("F16").has_value());
}

TEST_CASE("model_info: hyper-parameters that do not fit are errors", "[gguf]") {
  Bytes b;
  b.header(0, 2).kv_str("general.architecture", "llama").str("llama.block_count").u32(10).u64(1ULL << 40);
  auto f = b.parse();
  REQUIRE(f.ok());
  auto m = gg::model_info(*f);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message == "metadata key 'llama.block_count' = 1099511627776 does not fit 32 bits");
  Bytes huge;
  huge.header(0, 2).kv_str("general.architecture", "llama").kv_u32("llama.block_count", 4000000000u);
  auto hf = huge.parse();
  REQUIRE(hf.ok());
  CHECK(gg::model_info(hf.value()).error().message == "llama.block_count 4000000000 is implausible");
}
