#!/usr/bin/env bash
# Installs missing packages, then configures and builds kevlaya-orch (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEVLAYA_BUILD_TESTS=OFF >/dev/null
cmake --build build --parallel "$(nproc)"
echo "kevlaya: built build/kevlaya-orch"
