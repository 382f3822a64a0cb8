#!/usr/bin/env bash
# Trains tiny Kev and Laya in PyTorch (CPU, seeded) and exports them to
# tools/decisions/models/{kev,laya}.gguf, their training summaries {kev,laya}.json and the model card;
# and kev-tools (Kev as a tool-calling model, tool_gen.py) to models/kev-tools.{gguf,json}.
#
#   tools/decisions/train.sh            (about 5-10 minutes for both on 2 busy cores)
#   MODELS=kev-tools tools/decisions/train.sh   (kev-tools alone: about 8 minutes)
#
# Steps: gen.py writes the held-out scenario files (tools/decisions/scenarios/); train.py (one per
# model, in parallel, one thread each, nice 19) generates the training data in memory (the exact
# prompts llama-server builds from pipelines/decide-verify.yaml), learns the shared vocabulary,
# trains and writes the F32 GGUF; card.py writes models/README.md (with eval.sh's reports when there).
# Needs Debian's python3-torch (for /usr/bin/python3) and an optimized BLAS (libopenblas0-pthread:
# torch's default reference BLAS is ~12x slower); both are installed with apt-get when missing.
# Env: SEED (20) EXAMPLES (16000) EPOCHS (3) SWAP (0.15) KEVLAYA_TRAIN_NICE (19)
#      MODELS ("kev laya kev-tools") TOOL_EXAMPLES (8000: kev-tools' examples are ~3x longer)
# Reproducible bit for bit with the same torch build, BLAS and CPU (float sums in the same order).
set -euo pipefail
cd "$(dirname "$0")/../.."
SEED=${SEED:-20} EXAMPLES=${EXAMPLES:-16000} EPOCHS=${EPOCHS:-3} SWAP=${SWAP:-0.15}
NICE=${KEVLAYA_TRAIN_NICE:-19}
MODELS=${MODELS:-kev laya kev-tools} TOOL_EXAMPLES=${TOOL_EXAMPLES:-8000}
PY=/usr/bin/python3
out=tools/decisions/models
work=var/decisions/train

need=()
"$PY" -c "import torch" 2>/dev/null || need+=(python3-torch)
"$PY" -c "import yaml" 2>/dev/null || need+=(python3-yaml)
[ -e /usr/share/wordnet/data.noun ] || need+=(wordnet-base)
[ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ] || need+=(libopenblas0-pthread)
if [ ${#need[@]} -gt 0 ]; then
  echo "train.sh: installing from Debian: ${need[*]}"
  sudo_=; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get install -y "${need[@]}" || { $sudo_ apt-get update && $sudo_ apt-get install -y "${need[@]}"; }
fi

mkdir -p "$work" "$out"
python3 tools/decisions/gen.py --pipeline pipelines/decide-verify.yaml --out tools/decisions/scenarios \
  --seed "$SEED" --scenarios-only
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
pids=()
for m in $MODELS; do
  n=$EXAMPLES; [ "$m" = kev-tools ] && n=$TOOL_EXAMPLES
  echo "train.sh: training $m ($n examples, $EPOCHS epochs, seed $SEED); log: $work/$m.log"
  nice -n "$NICE" "$PY" tools/decisions/train.py --model "$m" --out "$out/$m.gguf" --seed "$SEED" \
    --examples "$n" --epochs "$EPOCHS" --swap "$SWAP" --threads 1 --summary "$out/$m.json" > "$work/$m.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "train.sh: training failed (see $work/*.log)" >&2; exit 1; }; done
python3 tools/decisions/card.py "$out" > "$out/README.md"
ls -l "$out"/*.gguf
echo "train.sh: done; check the export with tools/decisions/fidelity.py, measure with tools/decisions/eval.sh"
