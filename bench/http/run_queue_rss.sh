#!/bin/bash
# Memory of queued pipeline runs (docs/benchmarks.md, "Queued run bodies in memory"): `serve` with a
# pipeline whose model takes 10 minutes to load, so the first run waits and the others queue; N
# async runs of about 1 MiB each (an input and 200,000 short candidates: a body whose parsed tree is
# many times its text) are posted, and the door's VmRSS is read before and after.
#   bench/http/run_queue_rss.sh ORCH_BINARY STANDIN_BINARY TINY_GGUF_TOOL [N=60]
set -euo pipefail
orch=$(realpath "$1"); standin=$(realpath "$2"); tool=$(realpath "$3"); n=${4:-60}
d=$(mktemp -d); trap 'kill $pid 2>/dev/null || true; rm -rf "$d"' EXIT
pid=
mkdir -p "$d/profiles" "$d/pipelines"
"$tool" model --out "$d/m.gguf" >/dev/null
printf 'name: kev\nbinary: %s\nmodel: %s\nextra_args: [--fake-load-ms, "600000"]\nhealth: {startup_timeout_s: 900}\n' \
  "$standin" "$d/m.gguf" >"$d/profiles/kev.yaml"
printf 'name: hold\nstages:\n  - name: s\n    model: kev\n    user: "{{input}}"\n' >"$d/pipelines/hold.yaml"
printf 'profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\nlimits: {max_body_bytes: 2097152}\nruns: {max_queued: 1000, max_queued_bytes: 268435456}\n' >"$d/kevlaya.yaml"
python3 -c 'import json; print(json.dumps({"input": "x", "candidates": ["ab"] * 200000}))' >"$d/body.json"
: >"$d/serve.log"
"$orch" serve "$d/kevlaya.yaml" --port 0 >"$d/serve.log" 2>&1 & pid=$!
until grep -q 'listening on' "$d/serve.log"; do sleep 0.05; done
url=$(grep -o 'http://[0-9.:]*' "$d/serve.log" | head -1)
rss() { awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status; }
before=$(rss)
for _ in $(seq "$n"); do
  curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$d/body.json" "$url/v1/pipelines/hold/runs?async=1"
done
sleep 1  # the last request's buffers are released
after=$(rss)
queued=$(curl -s "$url/status" | python3 -c 'import json,sys; r=json.load(sys.stdin)["pipeline_runs"]; print(r["queued"], r["queued_bytes"] // 1048576)')
echo "runs queued, MiB of bodies: $queued; door VmRSS before ${before} MiB, after ${after} MiB, +$((after - before)) MiB"
