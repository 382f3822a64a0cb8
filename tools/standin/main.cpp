// llama-server stand-in (placeholder until implemented).
#include <cstdio>
int main() {
  std::fprintf(stderr, "error: stand-in not implemented yet\n");
  return 1;
}
