#!/usr/bin/env bash
# Installs missing packages, builds with -Werror under AddressSanitizer + UBSan, runs every test.
# Tests that need the real llama-server use $KEVLAYA_LLAMA_SERVER; when it is unset, Debian's packaged
# llama-server is fetched into var/llama-server/ (tools/llama-server/fetch.sh). If that fails the run
# goes on (those tests report Skipped) and the last lines say how many were skipped and why.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
real_note=
if [ -z "${KEVLAYA_LLAMA_SERVER:-}" ]; then
  if fetch_err=$(tools/llama-server/fetch.sh 2>&1); then
    echo "$fetch_err"
    export KEVLAYA_LLAMA_SERVER=$PWD/var/llama-server/llama-server
  else
    echo "$fetch_err" >&2
    real_note=$(printf '%s\n' "$fetch_err" | tail -n1)
  fi
fi
# A clean clone on a machine that built before reuses ccache's objects (paths relative to the tree).
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEVLAYA_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-asan --parallel "$(nproc)"
# The client libraries of tests/e2e/clients (pinned in tests/package-lock.json); without them those tests skip.
if command -v npm >/dev/null; then (cd tests && npm ci --no-audit --no-fund >/dev/null) || echo "kevlaya: npm ci in tests/ failed: client tests will skip" >&2; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
rc=0
ctest --output-on-failure --parallel "$(nproc)" --timeout 300 "$@" || rc=$?
if [ -n "$real_note" ]; then
  n=$(ctest -N -R "real llama-server" 2>/dev/null | sed -n 's/^Total Tests: //p')
  echo "******************************************************************************" >&2
  echo "kevlaya: ${n:-the} real llama-server tests were SKIPPED: no real llama-server." >&2
  echo "kevlaya: $real_note" >&2
  echo "kevlaya: set KEVLAYA_LLAMA_SERVER=/path/to/llama-server to run them." >&2
  echo "******************************************************************************" >&2
fi
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && [ -z "${KEVLAYA_CHROMIUM:-}" ]; then
  echo "kevlaya: the status page's browser tests were SKIPPED: no chromium (tools/deps.sh installs it)." >&2
fi
exit "$rc"
