// Thin executable over the kevlaya_core library (all logic lives in orchestrator/*).
#include <string>

#include "cli/commands.hpp"

#ifdef KEVLAYA_MIMALLOC
// The executable links mimalloc (orchestrator/CMakeLists.txt): its malloc and operator new replace
// glibc's for the whole process, a tenth of the door's instructions per request (docs/benchmarks.md).
#include <mimalloc.h>
#endif

namespace {

// What --version names as the process's allocator: only the executable knows what it links.
std::string allocator_name() {
#if defined(KEVLAYA_MIMALLOC)
  const int v = mi_version();  // also keeps the library a dependency under --as-needed
  return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
#elif defined(KEVLAYA_SANITIZER_ALLOCATOR)
  return "AddressSanitizer's";
#else
  return "glibc malloc";
#endif
}

}  // namespace

int main(int argc, char** argv) { return kevlaya::cli::run_cli(argc, argv, allocator_name()); }
