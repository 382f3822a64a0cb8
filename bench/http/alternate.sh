#!/usr/bin/env bash
# Alternating Kev/Laya chat calls, side by side in one run, through the real interfaces:
#  - door (rotate): `kevlaya-orch serve`, default scheduling, `residency: rotate` (every call a switch);
#  - router: llama.cpp's router mode (`--models-dir`, `--models-max 1`, same binary, same models);
#  - door (defaults): the literal defaults (no residency/gpu keys). Without a GPU budget host RAM
#    decides (docs/ledger.md, "No GPU"): the two tiny models fit, so they stay resident;
#  - router (defaults): llama.cpp's router on its own defaults (no --models-max: up to 4 loaded);
#  - door (co-resident): `residency: auto` with `gpu.vram_mib: 24576`, what a machine with a GPU
#    gets: both tiny models fit, stay resident, and no call switches;
#  - door (no guess): rotate with scheduling.switch_ahead false (the default guesses the next
#    model of strictly alternating calls and starts it while the caller is between calls);
#  - seed: start, poll /health every 1 s, call, SIGTERM, sleep 2.
# The servers run at once and are called in turn (door, router, defaults, ..., door, ...), so all
# see the same machine state; then the door's switch phases (median, from /status) are printed, and
# consecutive calls (alternate_calls.py), back to back and with THINK_MS (default 50) between calls.
# Usage: bench/http/alternate.sh [N]   (ORCH, TINY, KEVLAYA_LLAMA_SERVER override the binaries)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-12}
orch=${ORCH:-build/kevlaya-orch}
tiny=${TINY:-build/tools/kevlaya-tiny-gguf}
bin=$(realpath "${KEVLAYA_LLAMA_SERVER:-var/llama-server/llama-server}")
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/models"
"$tiny" model --out "$tmp/models/kev.gguf" --seed 1 >/dev/null
"$tiny" model --out "$tmp/models/laya.gguf" --seed 2 >/dev/null
body() { printf '{"model":"%s","messages":[{"role":"user","content":"Once"}],"max_tokens":4}' "$1"; }
call() {  # url model -> seconds; a call that does not answer 200 stops the bench
  local out
  out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' -d "$(body "$2")" "$1/v1/chat/completions")
  [ "${out%% *}" = 200 ] || { echo "bench: $1 answered ${out%% *} for $2" >&2; return 1; }
  echo "${out#* }"
}
wait_health() { for _ in $(seq 1 600); do curl -sf "$1/health" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# The router re-executes /proc/self/exe. Through tools/llama-server/fetch.sh's loader wrapper that
# is ld.so, so for the wrapper a copy of the real binary is made whose ELF interpreter is the
# prefix's own ld.so (a short link, patched in place), with the wrapper's library and backend paths
# in the environment, which the router's children inherit. The doors run the very same command
# (binary + env in their profiles), so no side pays the wrapper's start-up and the other not.
run_bin=$bin
run_env=()
if head -c 2 "$bin" | grep -q '#!'; then
  r=$tmp/r
  mkdir -p "$r"
  sed -e 's|^exec .*|printf "%s\\n%s\\n" "$GGML_BACKEND_PATH" "$libs"|' -e 's|BASH_SOURCE\[0\]|wrapper|g' "$bin" >"$r/env.sh"
  { read -r backend; read -r libs; } < <(wrapper=$bin bash "$r/env.sh")
  ln -s "$libs/ld-linux-x86-64.so.2" "$r/ld"
  cp "${bin%/*}/root/usr/bin/llama-server" "$r/llama-server"
  python3 - "$r/llama-server" "$r/ld" <<'EOF'
import struct, sys
path, interp = sys.argv[1], sys.argv[2].encode() + b"\0"
data = bytearray(open(path, "rb").read())
phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
    if p_type == 3:  # PT_INTERP
        if len(interp) > p_filesz: sys.exit(f"interpreter path too long: {interp!r}")
        data[p_offset:p_offset + p_filesz] = interp.ljust(p_filesz, b"\0")
open(path, "wb").write(data)
EOF
  run_bin=$r/llama-server
  run_env=("LD_LIBRARY_PATH=$libs:$libs/llama" "GGML_BACKEND_PATH=$backend")
fi

door() {  # name port residency [gpu vram_mib] [scheduling yaml]
  local d=$tmp/$1 e
  mkdir -p "$d/profiles" "$d/pipelines"
  for m in kev laya; do
    printf 'name: %s\nbinary: %s\nmodel: %s\nngl: 0\nctx: 512\n' "$m" "$run_bin" "$tmp/models/$m.gguf" >"$d/profiles/$m.yaml"
    ((${#run_env[@]})) && echo 'env:' >>"$d/profiles/$m.yaml"
    for e in "${run_env[@]}"; do printf '  %s: "%s"\n' "${e%%=*}" "${e#*=}" >>"$d/profiles/$m.yaml"; done
  done
  printf 'listen:\n  host: 127.0.0.1\n  port: %s\nprofiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n' \
    "$2" >"$d/kevlaya.yaml"
  [ "$3" = auto ] || printf 'residency: %s\n' "$3" >>"$d/kevlaya.yaml"
  [ -z "${4:-}" ] || printf 'gpu:\n  vram_mib: %s\n' "$4" >>"$d/kevlaya.yaml"
  [ -z "${5:-}" ] || printf 'scheduling: %s\n' "$5" >>"$d/kevlaya.yaml"
  "$orch" serve "$d/kevlaya.yaml" >"$d/door.log" 2>&1 & pids+=($!)
  wait_health "http://127.0.0.1:$2" || { cat "$d/door.log" >&2; exit 1; }
}

door rotate 18431 rotate
door defaults 18434 auto
door coresident 18435 auto 24576
door noahead 18436 rotate "" "{switch_ahead: false}"
env "${run_env[@]}" "$run_bin" --models-dir "$tmp/models" --models-max 1 --port 18432 --host 127.0.0.1 -c 512 -ngl 0 \
  >"$tmp/router.log" 2>&1 & pids+=($!)
wait_health http://127.0.0.1:18432 || { tail "$tmp/router.log" >&2; exit 1; }
env "${run_env[@]}" "$run_bin" --models-dir "$tmp/models" --port 18437 --host 127.0.0.1 -c 512 -ngl 0 \
  >"$tmp/router-defaults.log" 2>&1 & pids+=($!)
wait_health http://127.0.0.1:18437 || { tail "$tmp/router-defaults.log" >&2; exit 1; }

# Calls 0 (cold starts) are dropped; then every call is a switch on the door (rotate) and router.
for i in $(seq 0 "$n"); do
  m=kev; ((i % 2)) && m=laya
  for s in 18431:rotate 18432:router 18434:defaults 18435:coresident 18436:noahead; do
    t=$(call "http://127.0.0.1:${s%%:*}" "$m")
    ((i > 0)) && echo "$t" >>"$tmp/${s#*:}.t"
  done
done
rot=$(median <"$tmp/rotate.t"); router=$(median <"$tmp/router.t"); def=$(median <"$tmp/defaults.t")
co=$(median <"$tmp/coresident.t"); noahead=$(median <"$tmp/noahead.t")
phases=$(curl -sf http://127.0.0.1:18436/status | jq -r '[.recent_switches[] | select(.from != "") | .phases_ms] as $s
  | def med(f): ([$s[] | f] | sort | .[(length / 2 | floor)]);
  "stop \(med(.stop)) ms, vram wait \(med(.vram_wait)), spawn->listening \(med(.spawn_to_listening)), detect \(med(.detect)), switch total \(med(.total)) ms (\($s | length) switches)"')

# The seed pattern: one server at a time, SIGTERM, sleep 2, poll /health once a second.
seed_calls() {
  for i in $(seq 1 4); do
    m=kev; ((i % 2)) && m=laya
    s=$(date +%s.%N)
    env "${run_env[@]}" "$run_bin" -m "$tmp/models/$m.gguf" --port 18433 --host 127.0.0.1 -c 512 -ngl 0 >/dev/null 2>&1 & p=$!
    until curl -sf http://127.0.0.1:18433/health >/dev/null 2>&1; do sleep 1; done
    call http://127.0.0.1:18433 "$m" >/dev/null
    kill "$p"; sleep 2; wait "$p" 2>/dev/null || true
    echo "$(date +%s.%N) - $s" | bc
  done
}
seed=$(seed_calls | median)
printf 'server: %s\n' "$("$bin" --version 2>&1 | grep -m1 version || echo "$bin")"
printf 'per alternating call (median of %d): door rotate %.4f s, router %.4f s, door literal defaults %.4f s, door co-resident %.4f s, seed %.3f s\n' \
  "$n" "$rot" "$router" "$def" "$co" "$seed"
printf 'door rotate / router %.2f, door defaults / router %.2f, door co-resident / router %.2f, door no guess / router %.2f\n' \
  "$(echo "$rot / $router" | bc -l)" "$(echo "$def / $router" | bc -l)" "$(echo "$co / $router" | bc -l)" \
  "$(echo "$noahead / $router" | bc -l)"
printf 'door (rotate, no guess) switch phases, median: %s\n' "$phases"

# Back to back and with think time: blocks of consecutive calls per server over a kept-alive
# connection (an agent's SDK), the door's switch_ahead on (the default) and off.
for think in 0 ${THINK_MS:-50}; do
  printf 'consecutive calls, think time %s ms (median of %d):\n' "$think" "$n"
  python3 bench/http/alternate_calls.py --ref router --think-ms "$think" --calls "$n" \
    router=http://127.0.0.1:18432 "door rotate=http://127.0.0.1:18431" \
    "door rotate, no guess=http://127.0.0.1:18436" "door co-resident=http://127.0.0.1:18435" \
    "door defaults=http://127.0.0.1:18434" "router defaults=http://127.0.0.1:18437"
done
