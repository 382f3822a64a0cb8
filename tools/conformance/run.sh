#!/usr/bin/env bash
# Runs llama.cpp's server tests (tools/server/tests, pytest) against a real llama-server and through
# the door (shim.py starts `kevlaya-orch serve` with a one-profile configuration in llama-server's
# place), then prints the per-test difference (compare.py). See docs/conformance.md.
#
#   tools/conformance/run.sh LLAMA_CPP_SRC [--models DIR] [--door BIN] [--server BIN] [--out DIR]
#                            [--only direct|door] [-k EXPR]     (--models is required)
#
# LLAMA_CPP_SRC: a llama.cpp source checkout outside this repository (its tools/server/tests,
# models/templates and tools/mtmd are used). --models: the folder of local GGUF files standing in for
# the suite's downloads (stories260K.gguf at least); tests whose model is not there are deselected and listed.
# --server: the real llama-server (default: var/llama-server/llama-server, fetched by
# tools/llama-server/fetch.sh). --door: kevlaya-orch; without it only the direct run is made.
# --only: run one side and compare with the other's existing report in --out
# (default var/conformance/out). The servers listen on CONFORMANCE_PORT (default 18480; also
# AIP_HTTP_PORT, where the suite's Vertex AI mode listens). Exits 0 once the table is printed,
# nonzero on a setup failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
die() { echo "run.sh: $*" >&2; exit 2; }

[[ $# -ge 1 ]] || die "usage: run.sh LLAMA_CPP_SRC [--models DIR] [--door BIN] [--server BIN] [--out DIR] [--only direct|door] [-k EXPR]"
src=$(cd "$1" && pwd) || die "no folder $1"
shift
models='' server=$repo/var/llama-server/llama-server door='' out=$repo/var/conformance/out
only='' kexpr=''
while [[ $# -gt 0 ]]; do
  case $1 in
    --models) models=$2; shift 2 ;;
    --door) door=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -k) kexpr=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
tests=$src/tools/server/tests
[[ -f $tests/utils.py && -d $tests/unit ]] || die "$src has no tools/server/tests (a llama.cpp checkout?)"
case $src/ in "$repo"/*) die "the llama.cpp checkout must be outside this repository" ;; esac
[[ -n $models ]] || die "--models DIR is required: a folder of GGUF files (stories260K.gguf at least)"
models=$(cd "$models" && pwd) || die "no models folder $models"
[[ -x $server ]] || { [[ $server == "$repo/var/llama-server/llama-server" ]] && "$repo/tools/llama-server/fetch.sh" >&2; } ||
  die "no llama-server at $server"
[[ -x $server ]] || die "no llama-server at $server"
[[ -z $door || -x $door ]] || die "no kevlaya-orch at $door"
server=$(realpath "$server")  # the suite runs from its own folder
[[ -z $door ]] || door=$(realpath "$door")
[[ -z $only || $only == direct || $only == door ]] || die "--only takes direct or door"
[[ $only != door || -n $door ]] || die "--only door needs --door BIN"
"$here/fetch-python.sh" >&2 || die "cannot make the suite's Python (tools/conformance/fetch-python.sh)"
py=$repo/var/conformance/python/python
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "llama-server: $("$server" --version 2>&1 | grep -m1 '^version' || echo unknown) ($server)"
[[ -z $door ]] || echo "door: $("$door" --version 2>&1 | head -n1) ($door)"

# One run of the suite; MODE is direct or door. pytest's exit 1 (some tests failed) is a result.
run_suite() {
  local mode=$1 work=$out/work-$1 rc=0 port=${CONFORMANCE_PORT:-18480}
  rm -rf "$work" && mkdir -p "$work"
  local args=(-p conformance_plugin -m "not slow" -v -rN -o cache_dir="$work/.pytest_cache"
              --junitxml="$out/$mode.xml")
  [[ -z $kexpr ]] || args+=(-k "$kexpr")
  echo "== $mode: $out/$mode.log"
  (cd "$tests" && env CONFORMANCE_MODE="$mode" CONFORMANCE_MODELS="$models" CONFORMANCE_SERVER="$server" \
      CONFORMANCE_DOOR="$door" CONFORMANCE_WORK="$work" LLAMA_SERVER_BIN_PATH="$here/shim.py" CONFORMANCE_PYTHON="$py" \
      PYTHONPATH="$here:$tests" PORT="$port" AIP_HTTP_PORT="$port" \
      nice -n 10 timeout 7200 "$py" -m pytest "${args[@]}" unit) >"$out/$mode.log" 2>&1 || rc=$?
  tail -n1 "$out/$mode.log"
  [[ $rc -le 1 ]] || die "pytest ($mode) exited $rc; see $out/$mode.log"
}
[[ $only == door ]] || run_suite direct
[[ -z $door || $only == direct ]] || run_suite door
reports=("$out/direct.xml")
[[ -f $out/door.xml && -n $door ]] && reports+=("$out/door.xml")
echo
/usr/bin/python3 "$here/compare.py" "${reports[@]}" | tee "$out/table.txt"
