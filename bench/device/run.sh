#!/usr/bin/env bash
# Real switch figures on a machine with an NVIDIA GPU, in one command (under 8 minutes):
#
#   bench/device/run.sh [SWITCHES]      (default 10)
#
# Writes two models of the reference size (7B shape by weight: 3900 MiB of F16 weights, the VRAM a
# 7B Q4_K_M takes; random weights from the project's GGUF writer), serves them with
# `kevlaya-orch serve` (residency rotate, all layers on the GPU) and alternates chat calls between
# them. Every switch record splits the time into stop, VRAM released (NVML), spawn to listening and
# ready; the script prints each switch and the medians. llama-server: $KEVLAYA_LLAMA_SERVER, else
# var/llama-server/llama-server or the one on PATH, if it lists a CUDA or Vulkan device. Whatever
# is missing (GPU, a GPU-capable server, a build) is said, with the exit code 2.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
switches=${1:-10}
say() { echo "bench/device: $*" >&2; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  say "no NVIDIA GPU answers nvidia-smi here; nothing to measure"
  exit 2
fi
nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv,noheader | sed 's/^/gpu: /'

server=${KEVLAYA_LLAMA_SERVER:-}
if [[ -z $server ]]; then
  for c in var/llama-server/llama-server "$(command -v llama-server || true)"; do
    [[ -n $c && -x $c ]] || continue
    if "$c" --list-devices 2>&1 | grep -qiE 'cuda|vulkan'; then server=$c; break; fi
    say "$c lists no CUDA or Vulkan device (a CPU-only build)"
  done
fi
if [[ -z $server ]]; then
  say "no GPU-capable llama-server: set KEVLAYA_LLAMA_SERVER to a CUDA or Vulkan build of llama.cpp's"
  say "llama-server, or install Debian's libggml0-backend-vulkan beside Debian's llama.cpp-tools"
  exit 2
fi
echo "server: $server ($("$server" --version 2>&1 | grep -m1 '^version' || echo 'version unknown'))"

if [[ ! -x build/kevlaya-orch || ! -x build/tools/kevlaya-tiny-gguf ]]; then
  say "building kevlaya-orch and kevlaya-tiny-gguf (Release) in build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEVLAYA_BUILD_TESTS=OFF -DKEVLAYA_BUILD_BENCH=OFF >/dev/null
  cmake --build build --target kevlaya-orch kevlaya-tiny-gguf
fi
exec python3 bench/device/switches.py --server "$server" --orch build/kevlaya-orch \
  --tiny build/tools/kevlaya-tiny-gguf --switches "$switches"
