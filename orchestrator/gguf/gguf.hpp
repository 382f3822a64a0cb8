// GGUF v2/v3 reader (little-endian). Memory-maps the file; never trusts a count or length
// before checking it against the bytes that are actually there.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/error.hpp"

namespace kevlaya::gguf {

// ggml tensor types (values as in ggml.h).
enum class GgmlType : std::uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct TypeTraits {
  const char* name;
  std::uint32_t block_size;  // elements per block
  std::uint32_t type_size;   // bytes per block
};
// nullopt for an unknown type value.
std::optional<TypeTraits> type_traits(std::uint32_t type);
// Bytes of a row of `n` elements of `type` (n must be a multiple of the block size); 0 if unknown.
std::uint64_t row_size(std::uint32_t type, std::uint64_t n);
// Quant name for general.file_type (LLAMA_FTYPE_*), e.g. 14 -> "Q4_K_S"; "unknown(N)" otherwise.
std::string file_type_name(std::uint32_t ftype);
// Cache-type name ("f16", "q8_0", ...) -> ggml type; nullopt if not a valid KV cache type.
std::optional<std::uint32_t> cache_type_from_name(const std::string& name);

enum class ValueType : std::uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

// Arrays longer than this keep only their first kArrayKeep elements (a 150k-token vocabulary
// would otherwise cost megabytes per inspect); `Value::array_len` is always the real length.
inline constexpr std::uint64_t kArrayKeep = 64;

// A metadata value. Arrays keep their element type; long arrays (tokens) are kept in full
// only for strings/numbers up to a cap — `array_len` is always the real length.
struct Value {
  ValueType type = ValueType::UINT8;
  ValueType elem_type = ValueType::UINT8;  // for ARRAY
  std::uint64_t array_len = 0;             // for ARRAY
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string,
               std::vector<std::uint64_t>, std::vector<std::int64_t>, std::vector<double>,
               std::vector<std::string>>
      v;
  std::optional<std::uint64_t> as_uint() const;  // any integer type (non-negative)
  std::optional<double> as_float() const;        // any numeric type
  std::optional<std::string> as_string() const;
};

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;  // dims, ne[0] first (fastest varying)
  std::uint32_t type = 0;
  std::uint64_t offset = 0;       // relative to the data section
  std::uint64_t n_elements() const;
  std::uint64_t n_bytes() const;  // from the type traits
};

struct File {
  std::uint32_t version = 0;
  std::map<std::string, Value> kv;
  std::vector<TensorInfo> tensors;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // absolute offset of the data section
  std::uint64_t file_size = 0;
  const Value* find(const std::string& key) const;
};

// Facts the ledger and `inspect` need.
struct ModelInfo {
  std::filesystem::path path;
  std::uint64_t file_size = 0;
  std::string architecture;  // general.architecture
  std::string name;          // general.name
  std::string general_type;  // general.type ("model" / "adapter"; empty if absent)
  std::uint64_t n_params = 0;
  std::uint32_t file_type = 0;  // general.file_type
  std::string quant;            // file_type_name(file_type), or inferred from dominant tensor type
  std::uint32_t n_layer = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim_k = 0;  // key_length or n_embd/n_head
  std::uint32_t head_dim_v = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_vocab = 0;
  std::vector<std::uint64_t> layer_bytes;  // per block index
  std::uint64_t output_bytes = 0;          // output.weight (+ output_norm) — offloaded with ngl > n_layer
  std::uint64_t token_embd_bytes = 0;      // token_embd (kept on CPU by llama.cpp)
  std::uint64_t other_bytes = 0;           // any non-layer tensor not counted above
  std::uint64_t tensor_bytes = 0;          // sum of all tensors
  std::map<std::string, std::uint64_t> bytes_by_type;  // ggml type name -> bytes
  // Adapters (general.type == "adapter")
  std::string adapter_type;  // adapter.type ("lora")
  double lora_alpha = 0;
  std::uint32_t lora_rank = 0;
  std::vector<std::string> lora_targets;  // base tensor names, e.g. "blk.0.attn_q.weight"
};

// Parses the header, metadata and tensor infos; checks every offset against the file size.
// Errors name what went wrong and the byte offset (Errc::bad_model).
Result<File> read_file(const std::filesystem::path& path);
// Same, on bytes in memory (used by the fuzzer and tests).
Result<File> read_buffer(const std::uint8_t* data, std::size_t size);
// read_file, and for the first shard of a split model (split.count > 1, llama.cpp's
// NAME-00001-of-0000N.gguf) every other shard's tensors appended, so that what is priced is the
// whole model; a missing or foreign shard is a bad_model error naming it.
Result<File> read_model(const std::filesystem::path& path);
// Derives ModelInfo from a parsed file.
Result<ModelInfo> model_info(const File& f, const std::filesystem::path& path = {});
// read_file + model_info.
Result<ModelInfo> inspect(const std::filesystem::path& path);

}  // namespace kevlaya::gguf
