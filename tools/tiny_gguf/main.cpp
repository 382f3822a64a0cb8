// Tiny GGUF writer CLI (placeholder until implemented).
#include <cstdio>
int main() {
  std::fprintf(stderr, "error: not implemented yet\n");
  return 1;
}
