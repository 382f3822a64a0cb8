#include "faults.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace standin {

void fake_abort(const char* why) {
  std::fprintf(stderr, "tools/standin/faults.cpp:%d: GGML_ASSERT(%s) failed\n", __LINE__, why);
  std::fflush(stderr);
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

void fake_rss(int mib) {
  if (mib <= 0) return;
  static std::unique_ptr<char[]> block;  // lives until exit, like model weights would
  const size_t bytes = static_cast<size_t>(mib) * 1024 * 1024;
  block.reset(new char[bytes]);
  std::memset(block.get(), 0x5a, bytes);
}

void ignore_sigterm() { std::signal(SIGTERM, SIG_IGN); }

void terminate_immediately() {
  std::fprintf(stderr, "Received second interrupt, terminating immediately.\n");
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace standin
