// A libFuzzer-style driver for builds without libFuzzer: runs LLVMFuzzerTestOneInput once per file
// of the directories (or files) given, so every normal build replays the committed seeds through
// the very fuzz targets. A target's own checks trap; an empty directory is an error (nothing ran).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int ran = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) ran += replay(e.path());
    } else {
      ran += replay(p);
    }
  }
  std::printf("replayed %d input(s)\n", ran);
  return ran > 0 ? 0 : 1;
}
