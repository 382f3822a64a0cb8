// The reader on files that change while they are read: a writer truncating and rewriting a model
// under the door (cp over it, a re-download, llama-quantize in place) must give an error, never a
// signal that kills the door (the mapped reader died of SIGBUS here).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "gguf/gguf.hpp"
#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/paths.hpp"

namespace gg = kevlaya::gguf;
using kevlaya::test::TempDir;

namespace {

// A model whose header (vocabulary) is several MiB, as a Llama-3 file's is: the reader needs more
// than its first read, and a truncation has many pages to land in.
std::string big_header_model(const std::filesystem::path& path) {
  gg::TinyModelSpec s = kevlaya::test::small_model_spec();
  s.n_vocab = 120000;
  REQUIRE(gg::write_tiny_model(path, s).ok());
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("reader: a header larger than the first read parses as the whole file does", "[gguf]") {
  TempDir dir("gguf-big-header");
  const auto bytes = big_header_model(dir / "m.gguf");
  auto whole = gg::read_buffer(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  REQUIRE(whole.ok());
  REQUIRE(whole->data_offset > (1u << 20));  // the header is past the first reads
  auto f = gg::read_file(dir / "m.gguf");
  REQUIRE(f.ok());
  CHECK(f->file_size == bytes.size());
  CHECK(f->data_offset == whole->data_offset);
  CHECK(f->tensors.size() == whole->tensors.size());
  CHECK(f->find("tokenizer.ggml.tokens")->array_len == 120000);
}

TEST_CASE("reader: a model file truncated and rewritten while it is read gives an error, never a signal", "[gguf]") {
  TempDir dir("gguf-changing");
  const auto path = dir / "m.gguf";
  const auto bytes = big_header_model(path);
  std::atomic<bool> stop{false};
  // The writer: truncate (to nothing, then to a third), write it back whole, again and again.
  std::thread writer([&] {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    for (int round = 0; !stop.load(); ++round) {
      if (::ftruncate(fd, (round % 2) ? static_cast<off_t>(bytes.size() / 3) : 0) != 0) break;
      std::size_t at = 0;
      while (at < bytes.size()) {
        const auto n = ::pwrite(fd, bytes.data() + at, bytes.size() - at, static_cast<off_t>(at));
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
    }
    ::close(fd);
  });
  int ok = 0, changed = 0, other = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < until; ++i) {
    auto f = gg::read_file(path);
    if (f.ok()) {
      // A success is the whole file, never a mix of two versions.
      ++ok;
      CHECK(f->file_size == bytes.size());
      CHECK(f->find("tokenizer.ggml.tokens")->array_len == 120000);
    } else if (f.error().code == kevlaya::Errc::io_error || f.error().code == kevlaya::Errc::bad_model) {
      ++(f.error().message.find("changed while it was read") != std::string::npos ? changed : other);
    } else {
      FAIL("unexpected error: " << f.error().message);
    }
  }
  stop = true;
  writer.join();
  INFO("ok " << ok << ", changed " << changed << ", other errors " << other);
  CHECK(ok + changed + other > 0);
  // The file is whole again: the next read succeeds.
  CHECK(gg::read_file(path).ok());
}
