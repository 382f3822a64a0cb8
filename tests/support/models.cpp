#include "support/models.hpp"

#include <unistd.h>

#include <stdexcept>
#include <string>

#include "gguf/builder.hpp"
#include "gguf/writer.hpp"

namespace kevlaya::test {

std::filesystem::path tiny_llama() {
  const auto path = binary_dir() / "test-models" / "stories-shaped.gguf";
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  // Test processes run in parallel: write a private file, then rename it into place (same bytes).
  auto tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  std::filesystem::create_directories(path.parent_path());
  if (auto st = gguf::write_tiny_model(tmp, gguf::stories_shaped_spec()); !st)
    throw std::runtime_error("cannot write " + tmp.string() + ": " + st.error().message);
  std::filesystem::rename(tmp, path);
  return path;
}

void write_projector(const std::filesystem::path& out, std::uint32_t projection_dim) {
  gguf::Builder b;
  b.kv_string("general.architecture", "clip");
  b.kv_string("general.type", "mmproj");
  b.kv_u32("clip.vision.projection_dim", projection_dim);
  b.tensor("mm.0.weight", {projection_dim, 4}, 0, gguf::Fill{});
  if (auto st = b.write(out); !st) throw std::runtime_error("cannot write " + out.string() + ": " + st.error().message);
}

bool have_stories260k() {
  std::error_code ec;
  return std::filesystem::is_regular_file(stories260k(), ec);
}

gguf::TinyModelSpec small_model_spec() {
  gguf::TinyModelSpec s;
  s.n_embd = 16;
  s.n_layer = 1;
  s.n_head = 2;
  s.n_head_kv = 1;
  s.n_ff = 32;
  s.n_vocab = 260;
  return s;
}

}  // namespace kevlaya::test
