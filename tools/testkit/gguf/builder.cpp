// GGUF v3 emitter: buffered metadata, streamed seeded tensor data.
#include "gguf/builder.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/gguf.hpp"

namespace kevlaya::gguf {
namespace {

constexpr std::uint32_t kGgufVersion = 3;
constexpr std::size_t kChunkElems = 1 << 16;  // elements generated per write

template <class T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}

void put_str(std::string& s, const std::string& v) {
  put<std::uint64_t>(s, v.size());
  s += v;
}

// splitmix64: fast, seedable and identical on every platform (std distributions are not).
struct Rng {
  std::uint64_t x;
  std::uint64_t next() {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) / static_cast<float>(1ULL << 24); }  // [0,1)
};

using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

Error io(const std::filesystem::path& out, const char* what) {
  return make_error(Errc::io_error, std::string("cannot ") + what + " " + out.string() + ": " + std::strerror(errno));
}

}  // namespace

std::uint16_t to_half(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                      // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return static_cast<std::uint16_t>(sign | h);
}

void Builder::key(const std::string& k, std::uint32_t type) {
  put_str(meta_, k);
  put<std::uint32_t>(meta_, type);
  ++n_kv_;
}

void Builder::kv_string(const std::string& k, const std::string& v) {
  key(k, static_cast<std::uint32_t>(ValueType::STRING));
  put_str(meta_, v);
}

void Builder::kv_u32(const std::string& k, std::uint32_t v) {
  key(k, static_cast<std::uint32_t>(ValueType::UINT32));
  put(meta_, v);
}

void Builder::kv_f32(const std::string& k, float v) {
  key(k, static_cast<std::uint32_t>(ValueType::FLOAT32));
  put(meta_, v);
}

void Builder::kv_bool(const std::string& k, bool v) {
  key(k, static_cast<std::uint32_t>(ValueType::BOOL));
  put<std::uint8_t>(meta_, v ? 1 : 0);
}

void Builder::kv_strings(const std::string& k, const std::vector<std::string>& v) {
  key(k, static_cast<std::uint32_t>(ValueType::ARRAY));
  put<std::uint32_t>(meta_, static_cast<std::uint32_t>(ValueType::STRING));
  put<std::uint64_t>(meta_, v.size());
  for (const auto& s : v) put_str(meta_, s);
}

void Builder::kv_f32s(const std::string& k, const std::vector<float>& v) {
  key(k, static_cast<std::uint32_t>(ValueType::ARRAY));
  put<std::uint32_t>(meta_, static_cast<std::uint32_t>(ValueType::FLOAT32));
  put<std::uint64_t>(meta_, v.size());
  for (const float x : v) put(meta_, x);
}

void Builder::kv_i32s(const std::string& k, const std::vector<std::int32_t>& v) {
  key(k, static_cast<std::uint32_t>(ValueType::ARRAY));
  put<std::uint32_t>(meta_, static_cast<std::uint32_t>(ValueType::INT32));
  put<std::uint64_t>(meta_, v.size());
  for (const auto x : v) put(meta_, x);
}

void Builder::tensor(const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type, Fill fill) {
  tensors_.push_back(Planned{name, std::move(ne), type, fill});
}

Status Builder::write(const std::filesystem::path& out, std::uint64_t alignment) const {
  auto padded = [alignment](std::uint64_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::string head;
  head += "GGUF";
  put(head, kGgufVersion);
  put<std::uint64_t>(head, tensors_.size());
  put<std::uint64_t>(head, n_kv_);
  head += meta_;
  std::vector<std::uint64_t> sizes;
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    TensorInfo info{t.name, t.ne, t.type, offset};
    put_str(head, t.name);
    put<std::uint32_t>(head, static_cast<std::uint32_t>(t.ne.size()));
    for (const auto d : t.ne) put(head, d);
    put(head, t.type);
    put(head, offset);
    sizes.push_back(info.n_bytes());
    offset += padded(info.n_bytes());
  }
  head.resize(padded(head.size()), '\0');

  FilePtr f(std::fopen(out.c_str(), "wb"), &std::fclose);
  if (!f) return io(out, "create");
  if (std::fwrite(head.data(), 1, head.size(), f.get()) != head.size()) return io(out, "write");
  std::vector<char> buf;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    const std::uint64_t elem = t.type == 1 ? 2 : 4;
    Rng rng{t.fill.seed};
    for (std::uint64_t done = 0; done < sizes[i] / elem;) {
      const std::uint64_t n = std::min<std::uint64_t>(kChunkElems, sizes[i] / elem - done);
      buf.resize(n * elem);
      for (std::uint64_t j = 0; j < n; ++j) {
        float v = t.fill.scale > 0 ? (rng.uniform() * 2.0f - 1.0f) * t.fill.scale : t.fill.constant;
        if (t.fill.row_len > 0) {
          const std::uint64_t row = (done + j) / t.fill.row_len;
          if (row >= t.fill.zero_begin && row < t.fill.zero_end) v = 0.0f;
        }
        if (t.type == 1) {
          const std::uint16_t h = to_half(v);
          std::memcpy(buf.data() + j * 2, &h, 2);
        } else {
          std::memcpy(buf.data() + j * 4, &v, 4);
        }
      }
      if (std::fwrite(buf.data(), 1, buf.size(), f.get()) != buf.size()) return io(out, "write");
      done += n;
    }
    const std::string pad(padded(sizes[i]) - sizes[i], '\0');
    if (std::fwrite(pad.data(), 1, pad.size(), f.get()) != pad.size()) return io(out, "write");
  }
  if (std::fflush(f.get()) != 0) return io(out, "write");
  return ok_status();
}

}  // namespace kevlaya::gguf
