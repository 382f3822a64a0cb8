#!/usr/bin/env bash
# The main job, end to end, on a fresh Debian 12 machine: install what is missing, build, then run
# the decide->verify pipeline on a small bundled task file with the tiny trained Kev and Laya
# (tools/decisions/models) on the real llama-server, CPU only. The summary scores the decisions
# against the tasks' known answers.
# The server: $KEVLAYA_SERVER_BINARY, else var/llama-server/llama-server, else llama-server on PATH,
# else Debian's, fetched by tools/llama-server/fetch.sh. Only when none can be had does it fall back
# to the bundled stand-in server with scripted answers (and says so).
#   tools/demo.sh --standin [ARGS]   uses the stand-in on purpose
# Other arguments go to `kevlaya-orch run`.
set -euo pipefail
cd "$(dirname "$0")/.."
standin=
case "${1:-}" in
  --standin) standin=1; shift ;;
  --real) shift ;;  # the default now; kept for old scripts
esac
tools/setup.sh
mkdir -p var/models var/demo
if [ -z "$standin" ] && [ -z "${KEVLAYA_SERVER_BINARY:-}" ]; then
  if [ -x var/llama-server/llama-server ]; then
    KEVLAYA_SERVER_BINARY=$PWD/var/llama-server/llama-server
  elif command -v llama-server >/dev/null 2>&1; then
    KEVLAYA_SERVER_BINARY=$(command -v llama-server)
  elif tools/llama-server/fetch.sh >&2; then
    KEVLAYA_SERVER_BINARY=$PWD/var/llama-server/llama-server
  else
    echo "kevlaya demo: no real llama-server could be had (see above): FALLING BACK to the stand-in" >&2
    echo "kevlaya demo: server with scripted answers; its decisions are not inference." >&2
    standin=1
  fi
fi
rm -f var/demo/results.jsonl
if [ -n "$standin" ]; then
  [ -f var/models/kev-tiny.gguf ] || build/tools/kevlaya-tiny-gguf standins --dir var/models
  export KEVLAYA_SERVER_BINARY=$PWD/build/tools/llama-server-standin
  export STANDIN_RESPONSES=$PWD/tools/demo/responses.json
  echo "kevlaya demo: model server = stand-in $KEVLAYA_SERVER_BINARY (scripted Kev/Laya answers)"
  config=kevlaya.tiny.yaml
else
  export KEVLAYA_SERVER_BINARY
  echo "kevlaya demo: model server = $KEVLAYA_SERVER_BINARY; models = tools/decisions/models (trained, CPU)"
  config=kevlaya.decisions.yaml
fi
exec build/kevlaya-orch run pipelines/decide-verify.yaml --config "$config" \
  --input-file tools/demo/tasks.jsonl --output var/demo/results.jsonl "$@"
