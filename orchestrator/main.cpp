// Thin executable over the kevlaya_core library (all logic lives in orchestrator/*).
#include "cli/commands.hpp"

#ifdef KEVLAYA_MIMALLOC
// The executable links mimalloc (orchestrator/CMakeLists.txt): its malloc and operator new replace
// glibc's for the whole process, a tenth of the door's instructions per request (docs/benchmarks.md).
#include <mimalloc.h>

#include <string>

int main(int argc, char** argv) {
  const int v = mi_version();  // also keeps the library a dependency under --as-needed
  const std::string name = "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
                           std::to_string(v % 10);
  return kevlaya::cli::run_cli(argc, argv, name);
}
#elif defined(KEVLAYA_SANITIZER_ALLOCATOR)
int main(int argc, char** argv) { return kevlaya::cli::run_cli(argc, argv, "AddressSanitizer's"); }
#else
int main(int argc, char** argv) { return kevlaya::cli::run_cli(argc, argv); }
#endif
