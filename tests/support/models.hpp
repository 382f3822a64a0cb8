// Models the tests run on. The project writes its own (a clone needs no downloaded file);
// llama2.c's stories260K (paths.hpp: stories260k()) is an optional extra next to the source tree.
#pragma once
#include <filesystem>

#include "support/paths.hpp"

namespace kevlaya::test {

// The project's own small llama GGUF with stories260K's shape (gguf::stories_shaped_spec(): the same
// tensor table and byte counts), written once per build tree; the real llama-server loads it.
std::filesystem::path tiny_llama();

// Whether ../shared/models/stories260K.gguf is there.
bool have_stories260k();

}  // namespace kevlaya::test

// Skips the current test, with the reason, when stories260K is absent.
#define KEVLAYA_SKIP_WITHOUT_STORIES260K()                                                          \
  do {                                                                                           \
    if (!::kevlaya::test::have_stories260k())                                                    \
      KEVLAYA_SKIP("optional model " << ::kevlaya::test::stories260k().string() << " is absent"); \
  } while (0)
