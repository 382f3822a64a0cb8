#!/usr/bin/env bash
# The main job, end to end, on a fresh Debian 12 machine: install what is missing, build, make the
# tiny stand-in models, then run the decide->verify pipeline on a small bundled task file.
# Uses the real llama-server when one is on PATH (or $KEVLAYA_SERVER_BINARY), else the bundled
# stand-in server with scripted Kev/Laya answers. It says which one it used.
#   tools/demo.sh --real [ARGS]   fetches Debian's llama-server into var/llama-server first and uses it
# Other arguments go to `kevlaya-orch run`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--real" ]; then
  shift
  tools/llama-server/fetch.sh
  KEVLAYA_SERVER_BINARY=$PWD/var/llama-server/llama-server
fi
tools/setup.sh
mkdir -p var/models var/demo
[ -f var/models/kev-tiny.gguf ] || build/tools/kevlaya-tiny-gguf standins --dir var/models
if [ -z "${KEVLAYA_SERVER_BINARY:-}" ]; then
  if command -v llama-server >/dev/null 2>&1; then
    KEVLAYA_SERVER_BINARY=$(command -v llama-server)
  else
    KEVLAYA_SERVER_BINARY=$PWD/build/tools/llama-server-standin
    export STANDIN_RESPONSES=$PWD/tools/demo/responses.json
  fi
fi
export KEVLAYA_SERVER_BINARY
echo "kevlaya demo: model server = $KEVLAYA_SERVER_BINARY"
rm -f var/demo/results.jsonl
exec build/kevlaya-orch run pipelines/decide-verify.yaml --config kevlaya.tiny.yaml \
  --input-file tools/demo/tasks.jsonl --output var/demo/results.jsonl "$@"
