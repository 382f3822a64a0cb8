#!/usr/bin/env bash
# Builds the Docker image from this checkout with podman, as a user would with `docker build`, then
# runs it on the tiny trained Kev (tools/decisions/models) and asks one chat call through its door.
# Nothing is pulled from a registry: `debian:bookworm` is made with mmdebstrap and `podman import`,
# and the llama.cpp server image the Dockerfile builds on is stood in for by bookworm with Debian's
# llama-server (tools/llama-server/fetch.sh) in /app, as the official image keeps it.
#
#   tools/docker/build_image.sh [--keep]     (as root; Debian's podman, runc and mmdebstrap)
#
# Writes var/docker/result.txt (the commands' timings and the chat answer). Exit 0: the image built
# and answered; 1: a step failed (named); 4: skipped (no podman/mmdebstrap/runc, or not root).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
keep=0
[[ ${1:-} == --keep ]] && keep=1
for tool in podman mmdebstrap runc git; do
  command -v "$tool" >/dev/null || { echo "build_image: SKIPPED: no $tool (apt install podman runc mmdebstrap)"; exit 4; }
done
[[ $(id -u) == 0 ]] || { echo "build_image: SKIPPED: run as root (rootless podman needs subuid ranges)"; exit 4; }
out=$repo/var/docker
mkdir -p "$out"
work=$(mktemp -d)
name=kevlaya-image-test-$$
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "== $*"; }
fail() { echo "build_image: FAILED: $*" >&2; exit 1; }
# These machines' kernels refuse podman's default ulimits and its default runtime (crun) is absent.
printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
pod() { podman "$@"; }
t0=$SECONDS

step "debian:bookworm from mmdebstrap"
if ! pod image exists docker.io/library/debian:bookworm; then
  mmdebstrap --variant=apt --include=ca-certificates bookworm "$work/bookworm.tar" >"$out/mmdebstrap.log" 2>&1 ||
    fail "mmdebstrap (see $out/mmdebstrap.log)"
  pod import "$work/bookworm.tar" docker.io/library/debian:bookworm >/dev/null
fi

step "the llama.cpp server image's stand-in: bookworm + Debian's llama-server in /app"
[[ -x $repo/var/llama-server/llama-server ]] || "$repo/tools/llama-server/fetch.sh" >/dev/null
mkdir -p "$work/llama"
cp -a "$repo/var/llama-server" "$work/llama/app"
cat >"$work/llama/Containerfile" <<'CF'
FROM docker.io/library/debian:bookworm
RUN apt-get update && apt-get install -y --no-install-recommends curl && rm -rf /var/lib/apt/lists/*
COPY app /app
ENTRYPOINT ["/app/llama-server"]
CF
pod build -q -t localhost/llama-cpp-standin:server "$work/llama" >"$out/llama-image.log" 2>&1 ||
  fail "the llama.cpp stand-in image (see $out/llama-image.log)"

step "kevlaya-orch's image from a clean export of HEAD (the Dockerfile as committed)"
mkdir -p "$work/src"
git -C "$repo" archive HEAD | tar -C "$work/src" -xf -
t1=$SECONDS
pod build --format docker -t localhost/kevlaya-orch:test --build-arg LLAMA_IMAGE=localhost/llama-cpp-standin:server \
  "$work/src" >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; fail "podman build (see $out/build.log)"; }
build_s=$((SECONDS - t1))

step "run it on the tiny trained Kev and ask one chat call"
mkdir -p "$work/models" "$work/etc/profiles" "$work/etc/pipelines"
cp "$repo/tools/decisions/models/kev.gguf" "$work/models/"
printf 'name: kev\nbinary: llama-server\nmodel: /models/kev.gguf\nngl: 0\nctx: 512\n' >"$work/etc/profiles/kev.yaml"
printf 'profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: /var/lib/kevlaya/state\nlog_dir: /var/lib/kevlaya/log\nlisten:\n  host: 0.0.0.0\n  port: 8080\n' \
  >"$work/etc/kevlaya.yaml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pod run -d --name "$name" -p "127.0.0.1:$port:8080" -v "$work/models:/models:ro" -v "$work/etc:/etc/kevlaya:ro" \
  localhost/kevlaya-orch:test >/dev/null || fail "podman run"
for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 1
done
answer=$(curl -sS -m 120 "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model":"kev","max_tokens":8,"messages":[{"role":"user","content":"Pick a strategy."}]}') ||
  { pod logs "$name" | tail -n 30; fail "no answer from the container's door"; }
echo "$answer" | grep -q '"choices"' || { pod logs "$name" | tail -n 30; fail "the door answered: $answer"; }
size=$(pod image inspect localhost/kevlaya-orch:test --format '{{.Size}}')
{
  echo "image: localhost/kevlaya-orch:test ($((size / 1024 / 1024)) MiB), built in ${build_s} s (podman $(podman --version | awk '{print $3}'), runc)"
  echo "chat call through the container's door: $answer"
  echo "total: $((SECONDS - t0)) s"
} | tee "$out/result.txt"
[[ $keep == 1 ]] || pod rmi -f localhost/kevlaya-orch:test >/dev/null 2>&1 || true
echo "build_image: OK"
