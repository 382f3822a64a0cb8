#!/usr/bin/env bash
# Installs missing packages, builds with -Werror under AddressSanitizer + UBSan, runs every test.
# Tests that need the real llama-server run when KEVLAYA_LLAMA_SERVER is set, else report Skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEVLAYA_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-asan --parallel "$(nproc)"
# The client libraries of tests/clients (pinned in tests/package-lock.json); without them those tests skip.
if command -v npm >/dev/null; then (cd tests && npm ci --no-audit --no-fund >/dev/null) || echo "kevlaya: npm ci in tests/ failed: client tests will skip" >&2; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
# Process-level tests share 2 cores with ASan; a test that fails is retried (up to 3 runs) so load
# spikes do not fail CI, while a deterministic failure still fails every run.
ctest --output-on-failure --parallel "$(nproc)" --timeout 300 --repeat until-pass:3 "$@"
