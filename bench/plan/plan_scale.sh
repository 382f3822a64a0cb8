#!/bin/bash
# Planning cost at the door (docs/benchmarks.md, "Residency planning with many profiles"):
# N profiles with distinct model files, residency auto, gpu.vram_mib 3000 (about six fit together),
# each timed through `check`, `serve` until it listens, and POST /admin/reload while GET /health is
# probed in a loop (the worst /health time during the reload is printed).
#   bench/plan/plan_scale.sh ORCH_BINARY TINY_GGUF_TOOL [N...]     (default N: 9 10 16 64)
# LIMIT=seconds (default 300) bounds each step; a step cut by it prints its time as ">LIMIT".
set -euo pipefail
orch=$(realpath "$1"); tool=$(realpath "$2"); shift 2
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(9 10 16 64)
limit=${LIMIT:-300}
work=$(mktemp -d); trap 'kill $serve_pid 2>/dev/null || true; rm -rf "$work"' EXIT
serve_pid=
"$tool" model --out "$work/m.gguf" >/dev/null
ms() { echo $(( $(date +%s%N) / 1000000 )); }
printf '%6s %10s %12s %11s %16s\n' profiles check_ms serve_listen reload_ms worst_health_ms
for n in "${counts[@]}"; do
  d="$work/n$n"; mkdir -p "$d/profiles" "$d/pipelines" "$d/models"
  for i in $(seq 0 $((n - 1))); do
    cp "$work/m.gguf" "$d/models/m$i.gguf"  # distinct paths: no shared base
    printf 'name: p%d\nbinary: /bin/true\nmodel: %s\nngl: 99\nctx: 256\n' "$i" "$d/models/m$i.gguf" >"$d/profiles/p$i.yaml"
  done
  printf 'profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\nresidency: auto\ngpu:\n  vram_mib: 3000\n' >"$d/kevlaya.yaml"
  t0=$(ms); timeout "$limit" "$orch" check "$d/kevlaya.yaml" >/dev/null 2>&1 || true; check=$(( $(ms) - t0 ))
  : >"$d/serve.log"
  t0=$(ms); "$orch" serve "$d/kevlaya.yaml" --port 0 >"$d/serve.log" 2>&1 & serve_pid=$!
  until grep -q 'listening on' "$d/serve.log" || [ $(( $(ms) - t0 )) -gt $((limit * 1000)) ]; do sleep 0.01; done
  listen=$(( $(ms) - t0 ))
  if ! grep -q 'listening on' "$d/serve.log"; then
    kill $serve_pid; wait $serve_pid 2>/dev/null || true; serve_pid=
    printf '%6d %10d %12s %11s %16s\n' "$n" "$check" ">$limit s" - -; continue
  fi
  url=$(grep -o 'http://[0-9.:]*' "$d/serve.log" | head -1)
  t0=$(ms); curl -s -o /dev/null --max-time "$limit" -X POST "$url/admin/reload" & rpid=$!
  worst=0
  while :; do  # at least one probe, then until the reload has answered
    h=$(curl -s -o /dev/null --max-time "$limit" -w '%{time_total}' "$url/health" | awk '{printf "%d", $1 * 1000}')
    [ "$h" -gt "$worst" ] && worst=$h
    kill -0 $rpid 2>/dev/null || break
  done
  wait $rpid; reload=$(( $(ms) - t0 ))
  kill $serve_pid; wait $serve_pid 2>/dev/null || true; serve_pid=
  printf '%6d %10d %12d %11d %16d\n' "$n" "$check" "$listen" "$reload" "$worst"
done
