#!/usr/bin/env bash
# Soak test (long; not in CI): `kevlaya-orch serve` with two stand-in children (kev, laya) takes
# SWITCHES groups of requests, alternating models (so every group is one switch), REQUESTS in all,
# PARALLEL at a time; the orchestrator's RSS, fds, threads and children are sampled after every
# group into samples.csv. At the end: status counts, switches (from /metrics), first/last/peak
# figures, leftover processes, and the serve log's leak report (ASan builds). See docs/reliability.md.
#
#   tools/soak.sh [--switches 2000] [--requests 20000] [--parallel 4] [--build build] [--out DIR]
#
# With a sanitizer build, ASAN_OPTIONS keeps the quarantine small so RSS reflects live memory.
set -euo pipefail
cd "$(dirname "$0")/.."

SWITCHES=2000
REQUESTS=20000
PARALLEL=4
BUILD=build
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --switches) SWITCHES=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ORCH=$PWD/$BUILD/kevlaya-orch
STANDIN=$PWD/$BUILD/tools/llama-server-standin
TINY=$PWD/$BUILD/tools/kevlaya-tiny-gguf
for b in "$ORCH" "$STANDIN" "$TINY"; do
  [ -x "$b" ] || { echo "soak.sh: $b not built (cmake --build $BUILD)" >&2; exit 1; }
done
OUT=${OUT:-$(mktemp -d /tmp/kevlaya-soak.XXXXXX)}
mkdir -p "$OUT/profiles" "$OUT/pipelines" "$OUT/models"
"$TINY" standins --dir "$OUT/models" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=4:detect_leaks=1}
TAG="KEVLAYA_SOAK_TAG=$OUT"

for m in kev laya; do
  cat > "$OUT/profiles/$m.yaml" <<EOF
name: $m
binary: $STANDIN
model: $OUT/models/$m-tiny.gguf
ngl: 0
ctx: 512
parallel: $PARALLEL
health: {first_probe_ms: 5, interval_ms: 10}
shared_base: false
stop: {grace_s: 2}
EOF
done
cat > "$OUT/kevlaya.yaml" <<EOF
profiles_dir: profiles
pipelines_dir: pipelines
state_dir: state
log_dir: logs
queue: {max_depth: 64, max_wait_s: 120}
residency: rotate
scheduling: {max_wait_before_swap_ms: 0, min_residency_ms: 0}
EOF

env "$TAG" "$ORCH" serve "$OUT/kevlaya.yaml" --port 0 > "$OUT/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
PORT=""
for _ in $(seq 600); do
  PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$OUT/serve.log" | head -1 | sed 's/.*://') || true
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || { echo "soak.sh: serve did not start; see $OUT/serve.log" >&2; exit 1; }
BASE=http://127.0.0.1:$PORT

sample() {  # elapsed_s,group,requests,rss_kib,fds,threads,children
  local rss threads fds kids
  rss=$(awk '/^VmRSS:/{print $2}' /proc/$PID/status)
  threads=$(awk '/^Threads:/{print $2}' /proc/$PID/status)
  fds=$(ls /proc/$PID/fd | wc -l)
  kids=$(ps --ppid $PID --no-headers | wc -l)
  echo "$SECONDS,$1,$2,$rss,$fds,$threads,$kids" >> "$OUT/samples.csv"
}
request() {  # one chat completion; prints the HTTP status
  curl -s -o /dev/null -w '%{http_code}\n' --max-time 300 -H 'Content-Type: application/json' \
    -d "{\"model\":\"$1\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"soak $2\"}]}" \
    "$BASE/v1/chat/completions"
}
export -f request
export BASE

echo "elapsed_s,group,requests,rss_kib,fds,threads,children" > "$OUT/samples.csv"
: > "$OUT/statuses.txt"
PER_GROUP=$(( (REQUESTS + SWITCHES - 1) / SWITCHES ))
SECONDS=0
done_requests=0
for g in $(seq 1 "$SWITCHES"); do
  model=$([ $((g % 2)) -eq 1 ] && echo laya || echo kev)
  n=$(( REQUESTS - done_requests < PER_GROUP ? REQUESTS - done_requests : PER_GROUP ))
  if [ "$n" -gt 0 ]; then
    seq "$n" | xargs -P "$PARALLEL" -I{} bash -c "request $model $g-{}" >> "$OUT/statuses.txt"
    done_requests=$((done_requests + n))
  else
    request "$model" "$g" >> "$OUT/statuses.txt"  # requests spent: one per switch
  fi
  sample "$g" "$done_requests"
  [ $((g % 100)) -eq 0 ] && echo "soak: $g/$SWITCHES groups, $done_requests requests, ${SECONDS}s" >&2
done

SWITCHES_DONE=$(curl -s "$BASE/metrics" | awk '/^kevlaya_switches_total/{s+=$2} END{print s+0}')
kill -TERM $PID
wait $PID && RC=0 || RC=$?
trap - EXIT
LEFT=$(grep -l -s -z "$TAG" /proc/[0-9]*/environ 2>/dev/null | wc -l || true)

{
  echo "soak: $SWITCHES groups (alternating kev/laya), $(wc -l < "$OUT/statuses.txt") requests, parallel $PARALLEL, ${SECONDS}s"
  echo "statuses: $(sort "$OUT/statuses.txt" | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
  echo "switches counted by /metrics: $SWITCHES_DONE"
  awk -F, 'NR == 2 {f = $0} NR > 1 {l = $0; if ($4 > r) r = $4; if ($5 > fd) fd = $5; if ($6 > t) t = $6}
           END {print "first sample (t,group,req,rss_kib,fds,threads,children): " f;
                print "last sample:                                         " l;
                print "peak: rss " r " KiB, fds " fd ", threads " t}' "$OUT/samples.csv"
  echo "serve exit code after SIGTERM: $RC; processes left with the soak tag: $LEFT"
  if grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer" "$OUT/serve.log"; then
    echo "sanitizer report in $OUT/serve.log"
  else
    echo "no sanitizer report in serve.log"
  fi
  echo "details: $OUT/samples.csv, $OUT/serve.log"
} | tee "$OUT/summary.txt"
