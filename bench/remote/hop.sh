#!/bin/sh
# Remote hop figures (docs/scale-out.md): a node door (stand-in child) and a front door with a
# `remote` profile for it, both on loopback.
#  1. added latency: N small non-streamed calls straight to the node, then N through the front
#     door, alternating one by one (same load for both); medians and p90s.
#  2. down detection: the node is stopped; time until the front door's /status says unreachable
#     (background checks only, no calls), with check_interval_s=CHECK and backoff_max_s=BACKOFF.
#  3. back detection: the node starts again on the same port; time until /status says reachable.
# Usage: bench/remote/hop.sh [BUILD_DIR] [N] [CHECK_S] [BACKOFF_S]
set -eu
BUILD=$(cd "${1:-build-asan}" && pwd); N=${2:-200}; CHECK=${3:-5}; BACKOFF=${4:-10}
ORCH=$BUILD/kevlaya-orch; STANDIN=$BUILD/tools/llama-server-standin
MODEL=$BUILD/test-models/stories-shaped.gguf   # written by the tests (any GGUF does)
[ -f "$MODEL" ] || MODEL=$(find "$BUILD" -name "*.gguf" | head -1)
W=$(mktemp -d); trap 'kill $NODE $FRONT 2>/dev/null; rm -rf "$W"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NP=$(free_port); FP=$(free_port)
mkdir -p $W/node/profiles $W/node/pipelines $W/front/profiles $W/front/pipelines
cat > $W/node/profiles/kev.yaml <<Y
name: kev
binary: $STANDIN
model: $MODEL
ctx: 256
ngl: 0
Y
cat > $W/front/profiles/big.yaml <<Y
name: big
backend: remote
url: http://127.0.0.1:$NP
model: kev
health: {check_interval_s: $CHECK, backoff_max_s: $BACKOFF}
Y
for d in node front; do printf 'profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n' > $W/$d/kevlaya.yaml; done
$ORCH serve $W/node/kevlaya.yaml --port $NP 2> $W/node.log & NODE=$!
$ORCH serve $W/front/kevlaya.yaml --port $FP 2> $W/front.log & FRONT=$!
until curl -fsS http://127.0.0.1:$FP/health >/dev/null 2>&1 && curl -fsS http://127.0.0.1:$NP/health >/dev/null 2>&1; do sleep 0.1; done
BODY='{"model":"MODEL","max_tokens":1,"messages":[{"role":"user","content":"x"}]}'
call() { curl -sS -o /dev/null -w '%{time_total}\n' -H 'Content-Type: application/json' -d "$(echo $BODY | sed s/MODEL/$2/)" http://127.0.0.1:$1/v1/chat/completions; }
call $NP kev >/dev/null; call $FP big >/dev/null   # load kev, open the front door's pool
i=0; : > $W/direct; : > $W/hop
while [ $i -lt $N ]; do call $NP kev >> $W/direct; call $FP big >> $W/hop; i=$((i+1)); done
stats() { sort -n $1 | awk '{a[NR]=$1} END {printf "median %.2f ms, p90 %.2f ms", a[int(NR/2)+1]*1000, a[int(NR*0.9)]*1000}'; }
echo "direct to node:    $(stats $W/direct)"
echo "through front door: $(stats $W/hop)"
state() { curl -sS http://127.0.0.1:$FP/status | python3 -c 'import json,sys; print([p["remote"]["state"] for p in json.load(sys.stdin)["profiles"] if p["name"]=="big"][0])'; }
ms() { python3 -c 'import time; print(int(time.monotonic()*1000))'; }
kill -TERM $NODE; wait $NODE || true; t0=$(ms)
until [ "$(state)" = unreachable ]; do sleep 0.05; done
echo "down noticed after $(( $(ms) - t0 )) ms (background checks every ${CHECK} s)"
$ORCH serve $W/node/kevlaya.yaml --port $NP 2> $W/node2.log & NODE=$!
until curl -fsS http://127.0.0.1:$NP/health >/dev/null 2>&1; do sleep 0.02; done; t0=$(ms)
until [ "$(state)" = reachable ]; do sleep 0.05; done
echo "back noticed after $(( $(ms) - t0 )) ms after the node answered /health (backoff cap ${BACKOFF} s)"
