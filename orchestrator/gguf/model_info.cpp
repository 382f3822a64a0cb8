// Derives the facts the ledger and `inspect` need from a parsed GGUF file.
#include <algorithm>
#include <cstdint>
#include <cctype>
#include <cstdio>
#include <limits>
#include <regex>
#include <set>

#include "gguf/gguf.hpp"

namespace kevlaya::gguf {
namespace {

// More layers than any real model has; guards the per-layer vector against hostile counts.
constexpr std::uint64_t kMaxLayers = 65536;

// A u32 hyper-parameter; per-layer arrays (some architectures) count as their largest kept entry.
Result<std::uint32_t> get_u32(const File& f, const std::string& key, std::uint32_t fallback = 0) {
  const Value* v = f.find(key);
  if (!v) return fallback;
  std::optional<std::uint64_t> x;
  if (v->type == ValueType::ARRAY) {
    if (const auto* u = std::get_if<std::vector<std::uint64_t>>(&v->v); u && !u->empty()) {
      x = *std::max_element(u->begin(), u->end());
    } else if (const auto* i = std::get_if<std::vector<std::int64_t>>(&v->v); i && !i->empty()) {
      const auto m = *std::max_element(i->begin(), i->end());
      if (m >= 0) x = static_cast<std::uint64_t>(m);
    }
  } else {
    x = v->as_uint();
  }
  if (!x) return make_error(Errc::bad_model, "metadata key '" + key + "' is not a non-negative integer");
  if (*x > std::numeric_limits<std::uint32_t>::max())
    return make_error(Errc::bad_model, "metadata key '" + key + "' = " + std::to_string(*x) + " does not fit 32 bits");
  return static_cast<std::uint32_t>(*x);
}

std::string get_str(const File& f, const std::string& key) {
  const Value* v = f.find(key);
  return v ? v->as_string().value_or("") : std::string();
}

// "blk.12.attn_q.weight" -> 12; nullopt for names outside a block.
std::optional<std::uint64_t> block_index(const std::string& name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  std::uint64_t n = 0;
  std::size_t i = kPrefix.size();
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    if (n > kMaxLayers) return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  if (i == kPrefix.size() || i >= name.size() || name[i] != '.') return std::nullopt;
  return n;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Status hparams(const File& f, ModelInfo& m) {
  const std::string a = m.architecture + ".";
  std::optional<Error> err;  // the first bad key wins
  auto u32 = [&](const std::string& key, std::uint32_t fallback = 0) -> std::uint32_t {
    auto r = get_u32(f, a + key, fallback);
    if (!r && !err) err = r.error();
    return r ? *r : 0;
  };
  m.n_layer = u32("block_count");
  m.n_embd = u32("embedding_length");
  m.n_head = u32("attention.head_count");
  m.n_head_kv = u32("attention.head_count_kv", m.n_head);
  m.n_ff = u32("feed_forward_length");
  m.n_ctx_train = u32("context_length");
  const std::uint32_t per_head = m.n_head ? m.n_embd / m.n_head : 0;
  m.head_dim_k = u32("attention.key_length", per_head);
  m.head_dim_v = u32("attention.value_length", per_head);
  if (const Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->type == ValueType::ARRAY) {
    m.n_vocab = static_cast<std::uint32_t>(std::min<std::uint64_t>(tokens->array_len, UINT32_MAX));
  } else {
    m.n_vocab = u32("vocab_size");
  }
  if (err) return *err;
  if (m.n_layer > kMaxLayers)
    return make_error(Errc::bad_model, a + "block_count " + std::to_string(m.n_layer) + " is implausible");
  return ok_status();
}

// Adds each tensor's bytes to its bucket: per layer, output, token embedding or other.
void tensor_sizes(const File& f, ModelInfo& m) {
  std::uint64_t n_blocks = m.n_layer;
  if (n_blocks == 0) {  // adapters and odd files carry no block_count: size by the names seen
    for (const auto& t : f.tensors)
      if (const auto b = block_index(t.name); b && *b < kMaxLayers) n_blocks = std::max(n_blocks, *b + 1);
  }
  m.layer_bytes.assign(n_blocks, 0);
  for (const auto& t : f.tensors) {
    const std::uint64_t bytes = t.n_bytes();
    m.n_params += t.n_elements();
    m.tensor_bytes += bytes;
    m.bytes_by_type[type_traits(t.type)->name] += bytes;  // the reader rejected unknown types
    if (const auto b = block_index(t.name); b && *b < n_blocks) {
      m.layer_bytes[*b] += bytes;
    } else if (t.name == "output.weight" || t.name == "output_norm.weight") {
      m.output_bytes += bytes;
    } else if (t.name == "token_embd.weight") {
      m.token_embd_bytes += bytes;
    } else {
      m.other_bytes += bytes;
    }
  }
}

// Quant of a file without general.file_type: the type holding the most bytes among matrices.
std::string dominant_type(const File& f) {
  std::map<std::string, std::uint64_t> by_type;
  for (const auto& t : f.tensors)
    if (t.ne.size() >= 2) by_type[type_traits(t.type)->name] += t.n_bytes();
  const auto it = std::max_element(by_type.begin(), by_type.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
  return it == by_type.end() ? std::string("unknown") : upper(it->first);
}

void adapter_facts(const File& f, ModelInfo& m) {
  m.adapter_type = get_str(f, "adapter.type");
  if (const Value* a = f.find("adapter.lora.alpha")) m.lora_alpha = a->as_float().value_or(0);
  std::set<std::string> seen;
  for (const auto& t : f.tensors) {
    for (std::string_view suffix : {".lora_a", ".lora_b"}) {
      if (!t.name.ends_with(suffix)) continue;
      std::string base = t.name.substr(0, t.name.size() - suffix.size());
      // lora_a is {ne0 of W, r}; token_embd's pair is flipped, so take the rank from other tensors.
      if (suffix == ".lora_a" && t.ne.size() >= 2 && !base.ends_with("token_embd.weight") &&
          t.ne[1] <= std::numeric_limits<std::uint32_t>::max()) {
        m.lora_rank = std::max(m.lora_rank, static_cast<std::uint32_t>(t.ne[1]));
      }
      if (seen.insert(base).second) m.lora_targets.push_back(std::move(base));
    }
  }
}

}  // namespace

Result<ModelInfo> model_info(const File& f, const std::filesystem::path& path) {
  ModelInfo m;
  m.path = path;
  m.file_size = f.file_size;
  m.architecture = get_str(f, "general.architecture");
  m.name = get_str(f, "general.name");
  m.general_type = get_str(f, "general.type");
  if (!m.architecture.empty())
    if (auto s = hparams(f, m); !s) return s.error();
  if (const Value* ft = f.find("general.file_type"); ft && ft->as_uint() &&
                                                     *ft->as_uint() <= std::numeric_limits<std::uint32_t>::max()) {
    m.file_type = static_cast<std::uint32_t>(*ft->as_uint());
    m.quant = file_type_name(m.file_type);
  } else {
    m.file_type = 1024;  // LLAMA_FTYPE_GUESSED
    m.quant = dominant_type(f);
  }
  tensor_sizes(f, m);
  if (m.general_type == "adapter") adapter_facts(f, m);
  return m;
}

Result<File> read_model(const std::filesystem::path& path) {
  auto first = read_file(path);
  if (!first) return first;
  const auto* count = first->find("split.count");
  const auto n = count ? count->as_uint().value_or(1) : 1;
  if (n <= 1) return first;
  static const std::regex shard_re(R"((.*)-(\d{5})-of-(\d{5})\.gguf)");
  std::smatch m;
  const std::string name = path.filename().string();
  if (!std::regex_match(name, m, shard_re) || std::stoull(m[2].str()) != 1 || std::stoull(m[3].str()) != n) {
    char want[64];
    std::snprintf(want, sizeof want, "NAME-00001-of-%05llu.gguf", static_cast<unsigned long long>(n));
    return make_error(Errc::bad_model, path.string() + ": split.count is " + std::to_string(n) +
                                           " but the file is not named " + want,
                      "give the first shard of a split model, named as llama-gguf-split writes it");
  }
  for (std::uint64_t k = 2; k <= n; ++k) {
    char part[64];
    std::snprintf(part, sizeof part, "-%05llu-of-%05llu.gguf", static_cast<unsigned long long>(k),
                  static_cast<unsigned long long>(n));
    const auto shard = path.parent_path() / (m[1].str() + part);
    auto f = read_file(shard);
    if (!f) return make_error(Errc::bad_model, "split model " + path.string() + ": shard " + std::to_string(k) +
                                                   " of " + std::to_string(n) + ": " + f.error().message);
    first->tensors.insert(first->tensors.end(), f->tensors.begin(), f->tensors.end());
    first->file_size += f->file_size;
  }
  return first;
}

Result<ModelInfo> inspect(const std::filesystem::path& path) {
  auto f = read_model(path);
  if (!f) return f.error();
  auto m = model_info(*f, path);
  if (!m) {
    Error e = m.error();
    e.message = path.string() + ": " + e.message;
    return e;
  }
  return m;
}

}  // namespace kevlaya::gguf
