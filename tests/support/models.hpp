// Models the tests run on. The project writes its own (a clone needs no downloaded file);
// llama2.c's stories260K (paths.hpp: stories260k(), from $KEVLAYA_STORIES260K) is an optional extra.
#pragma once
#include <cstdint>
#include <filesystem>

#include "gguf/writer.hpp"
#include "support/paths.hpp"

namespace kevlaya::test {

// The project's own small llama GGUF with stories260K's shape (gguf::stories_shaped_spec(): the same
// tensor table and byte counts), written once per build tree; the real llama-server loads it.
std::filesystem::path tiny_llama();

// A multimodal projector GGUF as llama.cpp's mmproj files describe themselves (general.architecture
// clip, general.type mmproj) whose output width is `projection_dim`; not loadable by a server.
void write_projector(const std::filesystem::path& out, std::uint32_t projection_dim);

// The smallest llama spec the writer makes (n_embd 16, one layer, 260 tokens): for tests that need
// many distinct model files (folders of thousands) rather than a model a server runs well.
gguf::TinyModelSpec small_model_spec();

// Whether $KEVLAYA_STORIES260K names a file.
bool have_stories260k();

}  // namespace kevlaya::test

// Skips the current test, with the reason, when stories260K is absent.
#define KEVLAYA_SKIP_WITHOUT_STORIES260K()                                                          \
  do {                                                                                           \
    if (!::kevlaya::test::have_stories260k())                                                    \
      KEVLAYA_SKIP("optional stories260K: set KEVLAYA_STORIES260K to its path to run this");  \
  } while (0)
