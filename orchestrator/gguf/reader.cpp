// GGUF v2/v3 parser. Every count and length is checked against the bytes that remain before
// anything is reserved or copied, so hostile input ends in one precise error, never a crash or
// a huge allocation. Errors read "<what>, at byte offset N" (Errc::bad_model).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "common/fd.hpp"
#include "gguf/gguf.hpp"

namespace kevlaya::gguf {
namespace {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

constexpr std::uint64_t kMaxDims = 4;
constexpr std::uint64_t kMaxTensorName = 63;  // ggml's GGML_MAX_NAME (64) minus the NUL
constexpr std::uint64_t kMinTensorInfo = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset
constexpr std::uint64_t kMinKv = 8 + 4 + 1;              // key length, value type, 1-byte value
constexpr std::uint64_t kMaxSigned = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// Bytes a scalar of this type takes on disk (strings: their length prefix); 0 if not scalar.
std::uint64_t min_value_size(std::uint32_t t) {
  switch (static_cast<ValueType>(t)) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 0;
  }
  return 0;
}

std::string printable(const std::uint8_t* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += (p[i] >= 0x20 && p[i] < 0x7f) ? static_cast<char>(p[i]) : '?';
  return s;
}

// Parses from the first `avail` bytes of a file of `size` bytes: counts and offsets are checked
// against the file size, reads against the bytes in hand. A read past `avail` but inside the file
// sets more_needed() (the caller reads more and parses again), so only the header is ever held.
class Parser {
 public:
  Parser(const std::uint8_t* data, std::size_t avail, std::uint64_t size) : d_(data), avail_(avail), n_(size) {}

  bool more_needed() const { return more_; }

  // Parses the whole header; on failure the error names the first problem found.
  Result<File> run() {
    File f;
    f.file_size = n_;
    std::uint64_t n_tensors = 0;
    std::uint64_t n_kv = 0;
    if (!header(f, n_tensors, n_kv)) return *err_;
    for (std::uint64_t i = 0; i < n_kv; ++i)
      if (!kv(f)) return *err_;
    if (!alignment(f)) return *err_;
    // Grow as infos are parsed: a hostile count in a multi-GB file must not reserve gigabytes.
    f.tensors.reserve(std::min<std::uint64_t>(n_tensors, 4096));
    std::set<std::string> names;
    for (std::uint64_t i = 0; i < n_tensors; ++i)
      if (!tensor_info(f, names)) return *err_;
    if (!data_section(f)) return *err_;
    return f;
  }

 private:
  const std::uint8_t* d_;
  std::size_t avail_;
  std::uint64_t n_;
  std::uint64_t pos_ = 0;
  bool more_ = false;
  std::optional<Error> err_;
  std::uint64_t alignment_at_ = 0;           // where general.alignment's value starts
  std::vector<std::uint64_t> tensor_at_;     // where each tensor info starts

  std::uint64_t left() const { return n_ - pos_; }

  bool fail(const std::string& what, std::uint64_t at) {
    err_ = make_error(Errc::bad_model, what + ", at byte offset " + std::to_string(at));
    return false;
  }

  // The bytes [pos_, pos_ + bytes) are in the file and in hand; past the hand, asks for more.
  bool in_hand(std::uint64_t bytes) {
    if (pos_ + bytes <= avail_) return true;
    more_ = true;
    return fail("header continues past the " + std::to_string(avail_) + " bytes read", pos_);
  }

  bool need(std::uint64_t bytes, const std::string& what) {
    if (bytes <= left()) return in_hand(bytes);
    return fail("truncated " + what + " (need " + std::to_string(bytes) + " bytes, " +
                    std::to_string(left()) + " left)",
                pos_);
  }

  template <class T>
  bool read(T& out, const std::string& what) {
    if (!need(sizeof(T), what)) return false;
    std::memcpy(&out, d_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  // Reads a length-prefixed string; with `out` null it only validates and skips it.
  bool string(std::string* out, const std::string& what) {
    const std::uint64_t at = pos_;
    std::uint64_t len = 0;
    if (!read(len, "length of " + what)) return false;
    if (len > left()) {
      return fail(what + " length " + std::to_string(len) + " runs past the end of the file (" +
                      std::to_string(left()) + " bytes left)",
                  at);
    }
    if (out && !in_hand(len)) return false;
    if (out) out->assign(reinterpret_cast<const char*>(d_ + pos_), len);
    pos_ += len;
    return true;
  }

  bool header(File& f, std::uint64_t& n_tensors, std::uint64_t& n_kv) {
    if (!need(4, "magic")) return false;
    if (std::memcmp(d_, "GGUF", 4) != 0)
      return fail("not a GGUF file: magic is \"" + printable(d_, 4) + "\" (expected \"GGUF\")", 0);
    pos_ = 4;
    if (!read(f.version, "version")) return false;
    if (f.version != 2 && f.version != 3) {
      const bool swapped = (f.version & 0xffffu) == 0 && (f.version >> 16) != 0;
      return fail("unsupported GGUF version " + std::to_string(f.version) +
                      (swapped ? " (big-endian files are not supported)" : " (supported: 2, 3)"),
                  4);
    }
    if (!read(n_tensors, "tensor count") || !read(n_kv, "metadata count")) return false;
    // Every kv and tensor info needs a minimum number of bytes: reject counts the file cannot hold.
    if (n_kv > left() / kMinKv) {
      return fail("metadata count " + std::to_string(n_kv) + " exceeds what the remaining " +
                      std::to_string(left()) + " bytes can hold",
                  16);
    }
    if (n_tensors > (left() - n_kv * kMinKv) / kMinTensorInfo) {
      return fail("tensor count " + std::to_string(n_tensors) + " exceeds what the remaining " +
                      std::to_string(left()) + " bytes can hold",
                  8);
    }
    return true;
  }

  bool kv(File& f) {
    const std::uint64_t at = pos_;
    std::string key;
    if (!string(&key, "metadata key")) return false;
    if (f.kv.count(key)) return fail("duplicate metadata key '" + key + "'", at);
    std::uint32_t type = 0;
    const std::uint64_t type_at = pos_;
    if (!read(type, "value type of '" + key + "'")) return false;
    Value v;
    if (type == static_cast<std::uint32_t>(ValueType::ARRAY)) {
      if (!array(key, v)) return false;
    } else {
      if (min_value_size(type) == 0)
        return fail("unknown value type " + std::to_string(type) + " for key '" + key + "'", type_at);
      if (key == "general.alignment") alignment_at_ = pos_;
      if (!scalar(type, key, v)) return false;
    }
    f.kv.emplace(std::move(key), std::move(v));
    return true;
  }

  template <class T>
  bool number(T& out, const std::string& key) {
    return read(out, "value of '" + key + "'");
  }

  // One scalar into the variant alternative that fits its type.
  bool scalar(std::uint32_t type, const std::string& key, Value& v) {
    v.type = static_cast<ValueType>(type);
    switch (v.type) {
      case ValueType::UINT8: { std::uint8_t x = 0; if (!number(x, key)) return false; v.v = std::uint64_t{x}; return true; }
      case ValueType::UINT16: { std::uint16_t x = 0; if (!number(x, key)) return false; v.v = std::uint64_t{x}; return true; }
      case ValueType::UINT32: { std::uint32_t x = 0; if (!number(x, key)) return false; v.v = std::uint64_t{x}; return true; }
      case ValueType::UINT64: { std::uint64_t x = 0; if (!number(x, key)) return false; v.v = x; return true; }
      case ValueType::INT8: { std::int8_t x = 0; if (!number(x, key)) return false; v.v = std::int64_t{x}; return true; }
      case ValueType::INT16: { std::int16_t x = 0; if (!number(x, key)) return false; v.v = std::int64_t{x}; return true; }
      case ValueType::INT32: { std::int32_t x = 0; if (!number(x, key)) return false; v.v = std::int64_t{x}; return true; }
      case ValueType::INT64: { std::int64_t x = 0; if (!number(x, key)) return false; v.v = x; return true; }
      case ValueType::FLOAT32: { float x = 0; if (!number(x, key)) return false; v.v = double{x}; return true; }
      case ValueType::FLOAT64: { double x = 0; if (!number(x, key)) return false; v.v = x; return true; }
      case ValueType::BOOL: { std::uint8_t x = 0; if (!number(x, key)) return false; v.v = x != 0; return true; }
      case ValueType::STRING: { std::string s; if (!string(&s, "string value of '" + key + "'")) return false; v.v = std::move(s); return true; }
      case ValueType::ARRAY: break;
    }
    return fail("unexpected value type for key '" + key + "'", pos_);
  }

  // Appends element `i` of an array to the kept prefix (only while i < kArrayKeep).
  static void keep(Value& arr, const Value& el) {
    std::visit(
        [&arr](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, bool>) {
            std::get<std::vector<std::uint64_t>>(arr.v).push_back(x ? 1 : 0);
          } else if constexpr (std::is_same_v<X, std::uint64_t> || std::is_same_v<X, std::int64_t> ||
                               std::is_same_v<X, double> || std::is_same_v<X, std::string>) {
            std::get<std::vector<X>>(arr.v).push_back(x);
          }
        },
        el.v);
  }

  static void init_array(Value& arr) {
    switch (arr.elem_type) {
      case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
        arr.v = std::vector<std::int64_t>{}; break;
      case ValueType::FLOAT32: case ValueType::FLOAT64: arr.v = std::vector<double>{}; break;
      case ValueType::STRING: arr.v = std::vector<std::string>{}; break;
      default: arr.v = std::vector<std::uint64_t>{}; break;  // unsigned and bool (as 0/1)
    }
  }

  bool array(const std::string& key, Value& arr) {
    arr.type = ValueType::ARRAY;
    std::uint32_t et = 0;
    const std::uint64_t et_at = pos_;
    if (!read(et, "array element type of '" + key + "'")) return false;
    if (et == static_cast<std::uint32_t>(ValueType::ARRAY))
      return fail("nested array in key '" + key + "' is not supported", et_at);
    const std::uint64_t el_size = min_value_size(et);
    if (el_size == 0)
      return fail("unknown array element type " + std::to_string(et) + " for key '" + key + "'", et_at);
    const std::uint64_t len_at = pos_;
    if (!read(arr.array_len, "array length of '" + key + "'")) return false;
    if (arr.array_len > left() / el_size) {
      return fail("array length " + std::to_string(arr.array_len) + " of key '" + key +
                      "' exceeds the remaining " + std::to_string(left()) + " bytes",
                  len_at);
    }
    arr.elem_type = static_cast<ValueType>(et);
    init_array(arr);
    for (std::uint64_t i = 0; i < arr.array_len; ++i) {
      if (i >= kArrayKeep && et != static_cast<std::uint32_t>(ValueType::STRING)) {
        pos_ += (arr.array_len - i) * el_size;  // fixed-size tail: checked above, skip at once
        break;
      }
      if (i >= kArrayKeep) {
        if (!skip_strings(key, i, arr.array_len)) return false;
        break;
      }
      Value el;
      if (!scalar(et, key, el)) return false;
      keep(arr, el);
    }
    return true;
  }

  // Skips elements [from, to) of a string array without building per-element messages (hot for
  // 150k-token vocabularies); falls back to string() only to report a bad element.
  bool skip_strings(const std::string& key, std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to; ++i) {
      std::uint64_t len = 0;
      if (left() >= 8 && !in_hand(8)) return false;
      if (left() >= 8) std::memcpy(&len, d_ + pos_, 8);
      if (left() < 8 || len > left() - 8) return string(nullptr, "element " + std::to_string(i) + " of '" + key + "'");
      pos_ += 8 + len;
    }
    return true;
  }

  bool alignment(File& f) {
    const Value* a = f.find("general.alignment");
    if (!a) return true;
    const auto v = a->as_uint();
    if (a->type != ValueType::UINT32 || !v || *v == 0 || (*v & (*v - 1)) != 0)
      return fail("general.alignment must be a uint32 power of two", alignment_at_);
    f.alignment = *v;
    return true;
  }

  bool dims(TensorInfo& t) {
    const std::uint64_t at = pos_;
    std::uint32_t n_dims = 0;
    if (!read(n_dims, "dimension count of tensor '" + t.name + "'")) return false;
    if (n_dims > kMaxDims)
      return fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (max 4)", at);
    std::uint64_t total = 1;
    for (std::uint32_t i = 0; i < n_dims; ++i) {
      const std::uint64_t d_at = pos_;
      std::uint64_t d = 0;
      if (!read(d, "dimension " + std::to_string(i) + " of tensor '" + t.name + "'")) return false;
      if (d > kMaxSigned)
        return fail("tensor '" + t.name + "' dimension " + std::to_string(i) + " is negative", d_at);
      t.ne.push_back(d);
      if (total != 0 && d != 0 && total > kMaxSigned / d)
        return fail("tensor '" + t.name + "' has too many elements", at);
      total *= d;
    }
    return true;
  }

  bool tensor_info(File& f, std::set<std::string>& names) {
    const std::uint64_t at = pos_;
    TensorInfo t;
    if (!string(&t.name, "tensor name")) return false;
    if (t.name.size() > kMaxTensorName)
      return fail("tensor name '" + t.name.substr(0, 16) + "...' is longer than 63 bytes", at);
    if (!names.insert(t.name).second) return fail("duplicate tensor name '" + t.name + "'", at);
    if (!dims(t)) return false;
    const std::uint64_t type_at = pos_;
    if (!read(t.type, "type of tensor '" + t.name + "'")) return false;
    const auto tt = type_traits(t.type);
    if (!tt) return fail("unknown ggml type " + std::to_string(t.type) + " for tensor '" + t.name + "'", type_at);
    const std::uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
    if (ne0 % tt->block_size != 0) {
      return fail("tensor '" + t.name + "' row of " + std::to_string(ne0) + " elements is not a multiple of the " +
                      tt->name + " block size " + std::to_string(tt->block_size),
                  type_at);
    }
    const std::uint64_t off_at = pos_;
    if (!read(t.offset, "data offset of tensor '" + t.name + "'")) return false;
    if (t.offset % f.alignment != 0) {
      return fail("tensor '" + t.name + "' data offset " + std::to_string(t.offset) +
                      " is not a multiple of the alignment " + std::to_string(f.alignment),
                  off_at);
    }
    tensor_at_.push_back(off_at);
    f.tensors.push_back(std::move(t));
    return true;
  }

  // The data section starts at the next multiple of the alignment; every tensor must lie inside the file.
  bool data_section(File& f) {
    const std::uint64_t pad = (f.alignment - pos_ % f.alignment) % f.alignment;
    f.data_offset = pos_ + pad;
    if (!f.tensors.empty() && f.data_offset > n_) {
      return fail("data section start " + std::to_string(f.data_offset) + " is past the end of the file (" +
                      std::to_string(n_) + " bytes)",
                  pos_);
    }
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
      const TensorInfo& t = f.tensors[i];
      const std::uint64_t bytes = t.n_bytes();
      std::uint64_t end = 0;
      if (__builtin_add_overflow(f.data_offset, t.offset, &end) || __builtin_add_overflow(end, bytes, &end) ||
          end > n_) {
        return fail("tensor '" + t.name + "' data (" + std::to_string(bytes) + " bytes at data offset " +
                        std::to_string(t.offset) + ") runs past the end of the file (" + std::to_string(n_) +
                        " bytes)",
                    tensor_at_[i]);
      }
    }
    return true;
  }
};

Error with_path(const std::filesystem::path& path, Error e) {
  e.message = path.string() + ": " + e.message;
  return e;
}

constexpr std::size_t kFirstRead = 64u << 10;        // small headers in one read; a Llama-3 vocabulary (~10 MB) in four
constexpr std::size_t kMaxHeaderBytes = 512u << 20;  // no real header comes near; bounds the buffer

bool same_file_state(const struct stat& a, const struct stat& b) {
  return a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

Error changed_while_read(const std::filesystem::path& path, const std::string& how) {
  return make_error(Errc::io_error, path.string() + " changed while it was read (" + how +
                                        "): it is being written; read it again when the writer is done");
}

// Reads [0, n) into `buf` with pread (a file shrinking under us gives a short read, never a signal).
std::optional<Error> read_prefix(int fd, const std::filesystem::path& path, std::vector<std::uint8_t>& buf,
                                 std::size_t n) {
  const std::size_t have = buf.size();
  buf.resize(n);
  for (std::size_t at = have; at < n;) {
    const ssize_t got = ::pread(fd, buf.data() + at, n - at, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return make_error(Errc::io_error, "cannot read " + path.string() + ": " + std::strerror(errno));
    if (got == 0) return changed_while_read(path, "it ended at byte " + std::to_string(at));
    at += static_cast<std::size_t>(got);
  }
  return std::nullopt;
}

}  // namespace

Result<File> read_buffer(const std::uint8_t* data, std::size_t size) {
  static const std::uint8_t kEmpty = 0;
  return Parser(data ? data : &kEmpty, data ? size : 0, data ? size : 0).run();
}

Result<File> read_file(const std::filesystem::path& path) {
  UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0)
    return make_error(Errc::io_error, "cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat before {};
  if (::fstat(fd.fd, &before) != 0 || !S_ISREG(before.st_mode))
    return make_error(Errc::io_error, path.string() + " is not a regular file");
  const auto size = static_cast<std::uint64_t>(before.st_size);
  if (size == 0) return with_path(path, read_buffer(nullptr, 0).error());
  // Owned bytes read with pread, not a mapping: a file truncated by a writer while it is parsed
  // (cp over it, a re-download, llama-quantize in place) must end in an error, not SIGBUS.
  std::vector<std::uint8_t> buf;
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size, kFirstRead));
  for (;;) {
    if (auto e = read_prefix(fd.fd, path, buf, want)) return *e;
    Parser parser(buf.data(), buf.size(), size);
    auto r = parser.run();
    if (!r && parser.more_needed() && want < size) {
      if (want >= kMaxHeaderBytes)
        return make_error(Errc::bad_model, path.string() + ": header is larger than " +
                                               std::to_string(kMaxHeaderBytes >> 20) + " MiB");
      want = static_cast<std::size_t>(std::min<std::uint64_t>({size, std::uint64_t{want} * 4, kMaxHeaderBytes}));
      continue;
    }
    // What was parsed must be one version of the file: same size and mtime before and after.
    struct stat after {};
    if (::fstat(fd.fd, &after) != 0 || !same_file_state(before, after))
      return changed_while_read(path, "its size or time changed");
    if (!r) return with_path(path, r.error());
    return r;
  }
}

}  // namespace kevlaya::gguf
