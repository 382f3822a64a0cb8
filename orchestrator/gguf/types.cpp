// ggml type traits, llama file-type names and the small accessors of Value / TensorInfo / File.
// Block and type sizes match ggml's `type_traits` table at llama.cpp b10470 (ggml/src/ggml.c).
#include <array>
#include <limits>

#include "gguf/gguf.hpp"

namespace kevlaya::gguf {
namespace {

struct TraitRow {
  std::uint32_t type;
  TypeTraits traits;
};

// Removed/deprecated ids (4, 5, 31-33, 36-38) are absent on purpose: ggml rejects them too.
constexpr std::array<TraitRow, 35> kTraits{{
    {0, {"f32", 1, 4}},        {1, {"f16", 1, 2}},        {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},     {6, {"q5_0", 32, 22}},     {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},     {9, {"q8_1", 32, 36}},     {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}},  {12, {"q4_K", 256, 144}},  {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}},  {15, {"q8_K", 256, 292}},  {16, {"iq2_xxs", 256, 66}},
    {17, {"iq2_xs", 256, 74}}, {18, {"iq3_xxs", 256, 98}}, {19, {"iq1_s", 256, 50}},
    {20, {"iq4_nl", 32, 18}},  {21, {"iq3_s", 256, 110}}, {22, {"iq2_s", 256, 82}},
    {23, {"iq4_xs", 256, 136}}, {24, {"i8", 1, 1}},       {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},       {27, {"i64", 1, 8}},       {28, {"f64", 1, 8}},
    {29, {"iq1_m", 256, 56}},  {30, {"bf16", 1, 2}},      {34, {"tq1_0", 256, 54}},
    {35, {"tq2_0", 256, 66}},  {39, {"mxfp4", 32, 17}},   {40, {"nvfp4", 64, 36}},
    {41, {"q1_0", 128, 18}},   {42, {"q2_0", 64, 18}},
}};

struct FtypeRow {
  std::uint32_t ftype;
  const char* name;
};

// LLAMA_FTYPE_* from include/llama.h (short names, as llama-quantize spells them).
constexpr std::array<FtypeRow, 37> kFtypes{{
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},      {7, "Q8_0"},
    {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},    {11, "Q3_K_S"},   {12, "Q3_K_M"},
    {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},  {16, "Q5_K_S"},   {17, "Q5_K_M"},
    {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},  {21, "Q2_K_S"},   {22, "IQ3_XS"},
    {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},  {26, "IQ3_S"},    {27, "IQ3_M"},
    {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},  {31, "IQ1_M"},    {32, "BF16"},
    {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"}, {39, "NVFP4"},  {40, "Q1_0"},
    {41, "Q2_0"},    {1024, "GUESSED"},
}};

// KV cache types llama-server accepts for --cache-type-k/-v (common/arg.cpp kv_cache_types).
constexpr std::array<std::uint32_t, 9> kCacheTypes{0, 1, 30, 8, 2, 3, 20, 6, 7};

}  // namespace

std::optional<TypeTraits> type_traits(std::uint32_t type) {
  for (const auto& row : kTraits)
    if (row.type == type) return row.traits;
  return std::nullopt;
}

std::uint64_t row_size(std::uint32_t type, std::uint64_t n) {
  const auto t = type_traits(type);
  if (!t) return 0;
  return n / t->block_size * t->type_size;
}

std::string file_type_name(std::uint32_t ftype) {
  for (const auto& row : kFtypes)
    if (row.ftype == ftype) return row.name;
  return "unknown(" + std::to_string(ftype) + ")";
}

std::optional<std::uint32_t> cache_type_from_name(const std::string& name) {
  for (const auto type : kCacheTypes)
    if (name == type_traits(type)->name) return type;
  return std::nullopt;
}

std::optional<std::uint64_t> Value::as_uint() const {
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&v); i && *i >= 0)
    return static_cast<std::uint64_t>(*i);
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::string> Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return std::nullopt;
}

std::uint64_t TensorInfo::n_elements() const {
  std::uint64_t n = 1;
  for (const auto d : ne)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<std::uint64_t>::max();
  return n;
}

std::uint64_t TensorInfo::n_bytes() const {
  const auto t = type_traits(type);
  if (!t || ne.empty()) return t ? t->type_size : 0;  // a 0-dim tensor is one scalar
  std::uint64_t bytes = row_size(type, ne[0]);
  for (std::size_t i = 1; i < ne.size(); ++i)
    if (__builtin_mul_overflow(bytes, ne[i], &bytes)) return std::numeric_limits<std::uint64_t>::max();
  return bytes;
}

const Value* File::find(const std::string& key) const {
  const auto it = kv.find(key);
  return it == kv.end() ? nullptr : &it->second;
}

}  // namespace kevlaya::gguf
