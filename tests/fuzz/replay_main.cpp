// A libFuzzer-style driver for builds without libFuzzer: runs LLVMFuzzerTestOneInput once per file
// of the directories (or files) given, so every normal build replays the committed seeds through
// the very fuzz targets. A target's own checks trap; an empty directory is an error (nothing ran).
//   --mutate-for SECONDS [--seed N]   then runs mutations of those seeds until the time is up
//   (byte flips, inserts, deletions, repeats, splices, HTTP tokens): blind, not coverage-guided,
//   for a compiler without libFuzzer (GCC). Each input is written to ./mutate-last-input first,
//   so the one that trapped is left behind.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void run(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

// One random edit of `s` (seeds: the other inputs, for splices).
void mutate_once(std::string& s, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  static const char* const kTokens[] = {"\r\n", "\r\n\r\n", "Content-Length: ", "Transfer-Encoding: chunked\r\n",
                                        "0\r\n\r\n", "Expect: 100-continue\r\n", "Host: 127.0.0.1\r\n", "{\"model\":",
                                        "\"stream\":true", "[[[[", "\xff\xfe", "%00", "HTTP/1.0", ";"};
  const auto pick = [&rng](std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; };
  const std::size_t at = pick(s.size() + 1);
  switch (rng() % 6) {
    case 0: if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8)); break;
    case 1: s.insert(at, 1, static_cast<char>(rng())); break;
    case 2: s.erase(at, pick(16) + 1); break;
    case 3: if (at < s.size()) s.insert(at, s.substr(at, pick(64) + 1)); break;
    case 4: { const auto& o = seeds[pick(seeds.size())]; const auto from = pick(o.size()); s.insert(at, o.substr(from, pick(256) + 1)); break; }
    default: s.insert(at, kTokens[pick(std::size(kTokens))]); break;
  }
}

int mutate_for(const std::vector<std::string>& seeds, double seconds, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::string s = seeds[rng() % seeds.size()];
    for (int i = 1 + static_cast<int>(rng() % 8); i > 0; --i) mutate_once(s, seeds, rng);
    if (s.size() > (1u << 20)) s.resize(1u << 20);
    std::ofstream("mutate-last-input", std::ios::binary | std::ios::trunc) << s;
    run(s);
    ++runs;
  }
  std::printf("mutated %llu input(s) in %.0f s (seed %llu): no finding\n", static_cast<unsigned long long>(runs),
              seconds, static_cast<unsigned long long>(seed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> seeds;
  double seconds = 0;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutate-for" && i + 1 < argc) { seconds = std::atof(argv[++i]); continue; }
    if (arg == "--seed" && i + 1 < argc) { seed = std::strtoull(argv[++i], nullptr, 10); continue; }
    const std::filesystem::path p(arg);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) seeds.push_back(read_file(e.path()));
    } else {
      seeds.push_back(read_file(p));
    }
  }
  for (const auto& s : seeds) run(s);
  std::printf("replayed %zu input(s)\n", seeds.size());
  if (seeds.empty()) return 1;
  return seconds > 0 ? mutate_for(seeds, seconds, seed) : 0;
}
