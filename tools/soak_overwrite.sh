#!/usr/bin/env bash
# Model files rewritten under a serving door (not in CI; docs/reliability.md): `serve --watch-config`
# over a models_dir with a model whose header is Llama-3-sized (a ~10 MB vocabulary) that is
# overwritten in a loop (cp over it, truncate + cat), while /admin/reload and SIGHUP keep asking for
# rescans. A second model, never touched, serves a call first: its child must keep its pid.
#
#   tools/soak_overwrite.sh [--seconds 600] [--build build] [--out DIR]
#
# Prints the rewrites, reloads and signals done, whether the door lived, and the steady child's pid
# before and after; exit 0 only when the door lived and the steady child was not restarted.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=600
BUILD=build
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_TOTAL=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "soak_overwrite.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ORCH=$PWD/$BUILD/kevlaya-orch
STANDIN=$PWD/$BUILD/tools/llama-server-standin
GGUF=$PWD/$BUILD/tools/kevlaya-tiny-gguf
for b in "$ORCH" "$STANDIN" "$GGUF"; do [ -x "$b" ] || { echo "soak_overwrite.sh: $b is missing (build first)" >&2; exit 2; }; done
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/kevlaya-overwrite.XXXXXX)
mkdir -p "$OUT/models" "$OUT/versions"
# Two versions of a big-header model (different weights, same size) and a small steady model.
"$GGUF" model --out "$OUT/versions/a.gguf" --n-vocab 150000 --n-embd 8 --n-head 2 --n-head-kv 1 --n-ff 16 --n-layer 1 --seed 1 >/dev/null
"$GGUF" model --out "$OUT/versions/b.gguf" --n-vocab 150000 --n-embd 8 --n-head 2 --n-head-kv 1 --n-ff 16 --n-layer 1 --seed 2 >/dev/null
"$GGUF" model --out "$OUT/models/steady.gguf" >/dev/null
cp "$OUT/versions/a.gguf" "$OUT/models/big.gguf"
port=$(( 20000 + RANDOM % 20000 ))
cat >"$OUT/kevlaya.yaml" <<EOF
listen: {host: 127.0.0.1, port: $port}
models_dir: models
models_binary: $STANDIN
state_dir: state
log_dir: logs
EOF
# A small quarantine keeps an ASan build's RSS meaningful.
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=8:detect_leaks=0} \
  "$ORCH" serve "$OUT/kevlaya.yaml" --watch-config >"$OUT/serve.log" 2>&1 &
door=$!
trap 'kill -TERM $door 2>/dev/null || true; wait $door 2>/dev/null || true' EXIT
base=http://127.0.0.1:$port
for _ in $(seq 100); do curl -fsS "$base/health" >/dev/null 2>&1 && break; sleep 0.2; done
chat='{"model":"steady","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'
curl -fsS "$base/v1/chat/completions" -H 'Content-Type: application/json' -d "$chat" >/dev/null
steady_pid() { curl -fsS "$base/status" | python3 -c 'import json,sys; print(next((p.get("pid") for p in json.load(sys.stdin)["profiles"] if p["name"]=="steady"), None))'; }
pid0=$(steady_pid)
rewrites=0 reloads=0 hups=0
end=$(( $(date +%s) + SECONDS_TOTAL ))
while [ "$(date +%s)" -lt "$end" ] && kill -0 $door 2>/dev/null; do
  v=$([ $((rewrites % 2)) -eq 0 ] && echo b || echo a)
  cp "$OUT/versions/$v.gguf" "$OUT/models/big.gguf" & cpid=$!
  curl -s -o /dev/null -X POST "$base/admin/reload" -H 'Content-Type: application/json' && reloads=$((reloads + 1))
  wait $cpid || true
  truncate -s 0 "$OUT/models/big.gguf"; kill -HUP $door 2>/dev/null && hups=$((hups + 1))
  cat "$OUT/versions/$v.gguf" >"$OUT/models/big.gguf"
  rewrites=$((rewrites + 2))
done
alive=no; kill -0 $door 2>/dev/null && alive=yes
pid1=$([ $alive = yes ] && steady_pid || echo none)
echo "seconds $SECONDS_TOTAL  rewrites $rewrites  reloads $reloads  SIGHUPs $hups  door alive: $alive"
echo "steady child pid: before $pid0, after $pid1"
grep -c "still being written" "$OUT/serve.log" | sed 's/^/reloads deferred (still being written): /' || true
[ "$alive" = yes ] && [ "$pid0" = "$pid1" ] && [ "$pid0" != None ]
