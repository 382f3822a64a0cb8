// libFuzzer entry: any byte string must parse to a File or to a bad_model error, never crash,
// hang or allocate without bound. model_info runs on whatever parses.
#include <cstddef>
#include <cstdint>

#include "gguf/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto f = kevlaya::gguf::read_buffer(data, size);
  if (f) {
    auto m = kevlaya::gguf::model_info(*f);
    (void)m;
  } else if (f.error().code != kevlaya::Errc::bad_model) {
    __builtin_trap();  // read_buffer reports only bad_model
  }
  return 0;
}
