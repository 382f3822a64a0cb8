#!/usr/bin/env bash
# Installs the missing build packages (tools/deps.sh build), then configures and builds kevlaya-orch
# (Release, unity units: cmake/unity.cmake) into build/: the product and the two tools the main job
# may use (the stand-in server and the tiny GGUF writer).
#   tools/setup.sh --all   builds every target of build/ (the benchmarks of bench/ too)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(--target kevlaya-orch llama-server-standin kevlaya-tiny-gguf)
[ "${1:-}" = --all ] && targets=()
tools/deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEVLAYA_BUILD_TESTS=OFF >/dev/null
cmake --build build --parallel "$(nproc)" "${targets[@]}"
echo "kevlaya: built build/kevlaya-orch"
