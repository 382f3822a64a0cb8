#!/usr/bin/env bash
# Alternating Kev/Laya chat calls (every call a switch), side by side in one run, through the real
# interfaces: `kevlaya-orch serve` on the default scheduling config, llama.cpp's router mode
# (`--models-dir`, `--models-max 1`, same binary, same two models), and the seed pattern (start,
# poll /health every 1 s, call, SIGTERM, sleep 2). Prints the median seconds per call of each.
# Usage: bench/http/alternate.sh [N]   (ORCH, TINY, KEVLAYA_LLAMA_SERVER override the binaries)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-12}
orch=${ORCH:-build/kevlaya-orch}
tiny=${TINY:-build/tools/kevlaya-tiny-gguf}
bin=${KEVLAYA_LLAMA_SERVER:-var/llama-server/llama-server}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/models" "$tmp/cfg/profiles" "$tmp/cfg/pipelines"
"$tiny" model --out "$tmp/models/kev.gguf" --seed 1 >/dev/null
"$tiny" model --out "$tmp/models/laya.gguf" --seed 2 >/dev/null
body() { printf '{"model":"%s","messages":[{"role":"user","content":"Once"}],"max_tokens":4}' "$1"; }
call() {  # url model -> seconds; a call that does not answer 200 stops the bench
  local out
  out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' -d "$(body "$2")" "$1/v1/chat/completions")
  [ "${out%% *}" = 200 ] || { echo "bench: $1 answered ${out%% *} for $2" >&2; return 1; }
  echo "${out#* }"
}
wait_health() { for _ in $(seq 1 300); do curl -sf "$1/health" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
alternate() {  # url -> per-call seconds, first call (a cold start) dropped
  for i in $(seq 0 "$n"); do m=kev; ((i % 2)) && m=laya; t=$(call "$1" "$m"); ((i > 0)) && echo "$t"; done
}

# The door, default scheduling (no scheduling keys), rotate.
for m in kev laya; do
  printf 'name: %s\nbinary: %s\nmodel: %s\nngl: 0\nctx: 512\n' "$m" "$(realpath "$bin")" "$tmp/models/$m.gguf" \
    >"$tmp/cfg/profiles/$m.yaml"
done
printf 'listen:\n  host: 127.0.0.1\n  port: 18431\nprofiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\nresidency: rotate\n' \
  >"$tmp/cfg/kevlaya.yaml"
"$orch" serve "$tmp/cfg/kevlaya.yaml" >"$tmp/door.log" 2>&1 & pids+=($!)
wait_health http://127.0.0.1:18431 || { cat "$tmp/door.log" >&2; exit 1; }
door=$(alternate http://127.0.0.1:18431 | median)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# llama.cpp's router mode on the same binary and models. (The router re-executes its own argv[0]:
# through tools/llama-server/fetch.sh's loader wrapper that is ld.so, so use a direct build here.)
"$bin" --models-dir "$tmp/models" --models-max 1 --port 18432 --host 127.0.0.1 -c 512 -ngl 0 >"$tmp/router.log" 2>&1 & pids+=($!)
wait_health http://127.0.0.1:18432
router=$(alternate http://127.0.0.1:18432 | median)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# The seed pattern: one server at a time, SIGTERM, sleep 2, poll /health once a second.
seed_calls() {
  for i in $(seq 1 4); do
    m=kev; ((i % 2)) && m=laya
    s=$(date +%s.%N)
    "$bin" -m "$tmp/models/$m.gguf" --port 18433 --host 127.0.0.1 -c 512 -ngl 0 >/dev/null 2>&1 & p=$!
    until curl -sf http://127.0.0.1:18433/health >/dev/null 2>&1; do sleep 1; done
    call http://127.0.0.1:18433 "$m" >/dev/null
    kill "$p"; sleep 2; wait "$p" 2>/dev/null || true
    echo "$(date +%s.%N) - $s" | bc
  done
}
seed=$(seed_calls | median)
printf 'per alternating call (median of %d): door %.3f s, router %.3f s, seed %.3f s; door/router %.2f\n' \
  "$n" "$door" "$router" "$seed" "$(echo "$door / $router" | bc -l)"
